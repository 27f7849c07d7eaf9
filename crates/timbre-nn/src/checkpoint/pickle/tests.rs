use std::collections::HashMap;

use proptest::prelude::*;

use super::unpickle;
use crate::checkpoint::Value;
use crate::checkpoint::convert::to_value;

/// Unpickles a stream without storages, as a `Value`.
fn load(bytes: &[u8]) -> anyhow::Result<Value> {
    let unpickled = unpickle(bytes)?;
    to_value(&unpickled.graph, unpickled.root, &HashMap::new())
}

fn ints(value: &Value) -> Vec<Option<i64>> {
    value
        .as_list()
        .expect("a list or tuple")
        .iter()
        .map(Value::as_i64)
        .collect()
}

/// `pickle.dumps({'a': [1, 2.5, 'xé', None, True], 'b': (1, (2, 3)), 'big': 2**70, 'neg': -7},
/// protocol=0)`
const PROTOCOL_0: &[u8] = b"(dp0\nVa\np1\n(lp2\nI1\naF2.5\naVx\xe9\np3\naNaI01\nasVb\np4\n(I1\n(I2\nI3\ntp5\ntp6\nsVbig\np7\nL1180591620717411303424L\nsVneg\np8\nI-7\ns.";

/// `x = [1]; pickle.dumps({'shared': [x, x], 'bytes': b'\x00\xff', 'set': {3},
/// 'ns': argparse.Namespace(k=1)}, protocol=2)`
const PROTOCOL_2: &[u8] = b"\x80\x02}q\x00(X\x06\x00\x00\x00sharedq\x01]q\x02(]q\x03K\x01ah\x03eX\x05\x00\x00\x00bytesq\x04c_codecs\nencode\nq\x05X\x03\x00\x00\x00\x00\xc3\xbfq\x06X\x06\x00\x00\x00latin1q\x07\x86q\x08Rq\tX\x03\x00\x00\x00setq\nc__builtin__\nset\nq\x0b]q\x0cK\x03a\x85q\rRq\x0eX\x02\x00\x00\x00nsq\x0fcargparse\nNamespace\nq\x10)\x81q\x11}q\x12X\x01\x00\x00\x00kq\x13K\x01sbu.";

/// `pickle.dumps({'bytes': b'ab', 'ba': bytearray(b'cd'), 'fs': frozenset([4]),
/// 'long': -2**100, 'f': 1.5}, protocol=5)`
const PROTOCOL_5: &[u8] = b"\x80\x05\x95P\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x05bytes\x94C\x02ab\x94\x8c\x02ba\x94\x96\x02\x00\x00\x00\x00\x00\x00\x00cd\x94\x8c\x02fs\x94(K\x04\x91\x94\x8c\x04long\x94\x8a\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0\x8c\x01f\x94G?\xf8\x00\x00\x00\x00\x00\x00u.";

#[test]
fn protocol_0_text_opcodes() {
    let value = load(PROTOCOL_0).unwrap();
    let a = value.get("a").and_then(Value::as_list).unwrap();
    assert_eq!(
        (a[0].as_i64(), a[1].as_f64(), a[2].as_str()),
        (Some(1), Some(2.5), Some("x\u{e9}"))
    );
    assert!(matches!((&a[3], &a[4]), (Value::None, Value::Bool(true))));
    let b = value.get("b").and_then(Value::as_list).unwrap();
    assert_eq!(
        (b[0].as_i64(), ints(&b[1])),
        (Some(1), vec![Some(2), Some(3)])
    );
    assert_eq!(
        value.get("big").and_then(Value::as_f64),
        Some(2f64.powi(70))
    );
    assert_eq!(value.get("neg").and_then(Value::as_i64), Some(-7));
}

#[test]
fn protocol_2_memo_sharing_bytes_sets_and_objects() {
    let value = load(PROTOCOL_2).unwrap();
    let shared = value.get("shared").and_then(Value::as_list).unwrap();
    assert_eq!(
        (ints(&shared[0]), ints(&shared[1])),
        (vec![Some(1)], vec![Some(1)])
    );
    assert!(matches!(value.get("bytes"), Some(Value::Bytes(b)) if b == &[0, 255]));
    assert_eq!(ints(value.get("set").unwrap()), [Some(3)]);
    let namespace = value.get("ns").unwrap();
    assert!(matches!(namespace, Value::Object { class, .. } if class == "argparse.Namespace"));
    assert_eq!(namespace.get("k").and_then(Value::as_i64), Some(1));
}

#[test]
fn protocol_5_frames_bytearrays_and_wide_ints() {
    let value = load(PROTOCOL_5).unwrap();
    assert!(matches!(value.get("bytes"), Some(Value::Bytes(b)) if b == b"ab"));
    assert!(matches!(value.get("ba"), Some(Value::Bytes(b)) if b == b"cd"));
    assert_eq!(ints(value.get("fs").unwrap()), [Some(4)]);
    assert_eq!(
        value.get("long").and_then(Value::as_f64),
        Some(-(2f64.powi(100)))
    );
    assert_eq!(value.get("f").and_then(Value::as_f64), Some(1.5));
}

#[test]
fn unknown_classes_become_objects_with_their_state() {
    // protocol 4: STACK_GLOBAL, MEMOIZE, NEWOBJ, BUILD of `mymod.Thing` with x = 5
    let bytes = b"\x80\x04\x95 \x00\x00\x00\x00\x00\x00\x00\x8c\x05mymod\x94\x8c\x05Thing\x94\x93\x94)\x81\x94}\x94\x8c\x01x\x94K\x05sb.";
    let value = load(bytes).unwrap();
    assert!(
        matches!(&value, Value::Object { class, args, .. } if class == "mymod.Thing" && args.is_empty())
    );
    assert_eq!(value.get("x").and_then(Value::as_i64), Some(5));
}

#[test]
fn ordered_and_default_dicts_are_dicts() {
    let ordered =
        load(b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01X\x01\x00\x00\x00kq\x02K\x01s.")
            .unwrap();
    assert_eq!(ordered.get("k").and_then(Value::as_i64), Some(1));
    let default = load(b"\x80\x02ccollections\ndefaultdict\nq\x00c__builtin__\nlist\nq\x01\x85q\x02Rq\x03X\x01\x00\x00\x00aq\x04]q\x05K\x01as.").unwrap();
    assert_eq!(ints(default.get("a").unwrap()), [Some(1)]);
}

#[test]
fn a_list_containing_itself_ends_in_none() {
    let value = load(b"\x80\x02]q\x00h\x00a.").unwrap();
    assert!(matches!(value.as_list(), Some([Value::None])));
}

#[test]
fn repeated_sharing_cannot_blow_up() {
    let mut bomb = b"\x80\x02]".to_vec();
    bomb.extend(b"2\x86".repeat(40));
    bomb.push(b'.');
    let message = format!("{:#}", load(&bomb).unwrap_err());
    assert!(message.contains("expand"), "{message}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let mut deep = b"]".repeat(5000);
    deep.extend(b"a".repeat(4999));
    deep.push(b'.');
    let message = format!("{:#}", load(&deep).unwrap_err());
    assert!(message.contains("nested deeper"), "{message}");
}

#[test]
fn every_truncation_is_an_error() {
    for stream in [PROTOCOL_0, PROTOCOL_2, PROTOCOL_5] {
        for len in 0..stream.len() {
            assert!(load(&stream[..len]).is_err(), "prefix of {len} bytes read");
        }
    }
}

#[test]
fn malformed_streams_name_the_problem() {
    let unsupported_storage: &[u8] = b"\x80\x02(X\x07\x00\x00\x00storagectorch\nQInt8Storage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x01tQ.";
    let cases: [(&[u8], &str); 6] = [
        (b"\x80\x02J\x01\x00", "truncated"),
        (b"\x80\x02X\xff\xff\xff\xff", "truncated"),
        (b"\x80\x02a.", "stack underflow"),
        (b"\x80\x02h\x07.", "memo entry 7"),
        (b"\x80\x02\xff", "unknown opcode 0xff"),
        (
            unsupported_storage,
            "storage type torch.QInt8Storage is not supported",
        ),
    ];
    for (bytes, expected) in cases {
        let message = format!("{:#}", load(bytes).unwrap_err());
        assert!(message.contains(expected), "{message}");
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = load(&bytes);
    }

    #[test]
    fn mutated_streams_never_panic(
        which in 0usize..3,
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut bytes = [PROTOCOL_0, PROTOCOL_2, PROTOCOL_5][which].to_vec();
        for (at, value) in flips {
            let at = at.index(bytes.len());
            bytes[at] = value;
        }
        let _ = load(&bytes);
    }
}
