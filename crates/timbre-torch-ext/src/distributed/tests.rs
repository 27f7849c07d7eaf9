use std::collections::HashMap;
use std::time::Instant;

use timbre_test_support::free_port;

use super::*;

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

#[test]
fn the_rendezvous_is_read_from_torchrun_and_slurm_variables() {
    let torchrun = Rendezvous::from_vars(vars(&[
        ("MASTER_ADDR", "node1"),
        ("MASTER_PORT", "29500"),
        ("WORLD_SIZE", "4"),
        ("RANK", "3"),
        ("LOCAL_RANK", "1"),
        ("TORCHELASTIC_USE_AGENT_STORE", "True"),
    ]))
    .unwrap();
    assert_eq!(
        (
            torchrun.host.as_str(),
            torchrun.port,
            torchrun.rank,
            torchrun.world
        ),
        ("node1", 29500, 3, 4)
    );
    assert_eq!(torchrun.local_rank, 1);
    assert!(torchrun.agent_store);
    assert_eq!(torchrun.timeout, DEFAULT_TIMEOUT);
    let slurm = Rendezvous::from_vars(vars(&[
        ("MASTER_ADDR", "node1"),
        ("MASTER_PORT", "29500"),
        ("SLURM_NTASKS", "2"),
        ("SLURM_PROCID", "1"),
        ("SLURM_LOCALID", "0"),
    ]))
    .unwrap();
    assert_eq!((slurm.rank, slurm.world, slurm.agent_store), (1, 2, false));
    // What a parent passes to the worker it starts reads back the same.
    let again = Rendezvous::from_vars(|name| {
        torchrun
            .env_vars()
            .into_iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    })
    .unwrap();
    assert_eq!((again.rank, again.world, again.port), (3, 4, 29500));
}

#[test]
fn a_rendezvous_missing_or_inconsistent_says_which_variable() {
    let error =
        |pairs: &[(&str, &str)]| Rendezvous::from_vars(vars(pairs)).unwrap_err().to_string();
    assert!(error(&[]).contains("MASTER_ADDR is not set"));
    let base = [
        ("MASTER_ADDR", "h"),
        ("MASTER_PORT", "70000"),
        ("WORLD_SIZE", "2"),
        ("RANK", "0"),
    ];
    assert!(error(&base).contains("MASTER_PORT=70000"));
    let rank_too_big = [
        ("MASTER_ADDR", "h"),
        ("MASTER_PORT", "1"),
        ("WORLD_SIZE", "2"),
        ("RANK", "2"),
    ];
    assert!(error(&rank_too_big).contains("RANK=2 is not below WORLD_SIZE=2"));
    let not_a_number = [
        ("MASTER_ADDR", "h"),
        ("MASTER_PORT", "x"),
        ("WORLD_SIZE", "2"),
        ("RANK", "0"),
    ];
    assert!(error(&not_a_number).contains("MASTER_PORT=\"x\""));
}

/// `world` ranks of one process, each on its own thread, running `body` on their group.
fn on_ranks<T: Send + 'static>(
    world: usize,
    body: impl Fn(ProcessGroup) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let port = free_port();
    let body = std::sync::Arc::new(body);
    let threads: Vec<_> = (0..world)
        .map(|rank| {
            let body = body.clone();
            std::thread::spawn(move || {
                let group = ProcessGroup::join(
                    &Rendezvous::on_this_machine(port, rank, world, Duration::from_secs(20)),
                    GroupBackend::Gloo,
                )
                .unwrap();
                body(group)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn gloo_sums_takes_the_maximum_and_broadcasts_across_ranks() {
    let results = on_ranks(3, |group| {
        let rank = group.rank() as f32;
        let sum = Tensor::from_slice(&[rank, 10.0 * rank]);
        group.sum_(&sum).unwrap();
        let max = Tensor::from_slice(&[rank, -rank]);
        group.max_(&max).unwrap();
        let broadcast = Tensor::from_slice(&[rank + 5.0]);
        group.broadcast_(&broadcast, 2).unwrap();
        group.barrier(Device::Cpu).unwrap();
        [sum, max, broadcast].map(|t| Vec::<f32>::try_from(t).unwrap())
    });
    for [sum, max, broadcast] in results {
        assert_eq!(sum, [3.0, 30.0]);
        assert_eq!(max, [2.0, 0.0]);
        assert_eq!(broadcast, [7.0]);
    }
}

#[test]
fn a_rank_that_never_joins_is_named_within_the_timeout() {
    let started = Instant::now();
    let error = ProcessGroup::join(
        &Rendezvous::on_this_machine(free_port(), 0, 3, Duration::from_secs(1)),
        GroupBackend::Gloo,
    )
    .err()
    .unwrap();
    let text = format!("{error:#}");
    assert!(
        text.contains("ranks 1, 2 of 3 did not join within 1 s"),
        "{text}"
    );
    assert!(text.contains("as rank 0 of 3"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_rendezvous_nobody_serves_fails_within_the_timeout_naming_it() {
    let port = free_port();
    let started = Instant::now();
    let error = ProcessGroup::join(
        &Rendezvous::on_this_machine(port, 1, 2, Duration::from_secs(1)),
        GroupBackend::Gloo,
    )
    .err()
    .unwrap();
    let text = format!("{error:#}");
    assert!(
        text.contains(&format!(
            "rendezvous at 127.0.0.1:{port} (MASTER_ADDR, MASTER_PORT) as rank 1 of 2"
        )),
        "{text}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_rank_that_leaves_ends_the_others_collective_with_an_error() {
    let results = on_ranks(2, |group| {
        let started = Instant::now();
        let result = if group.rank() == 1 {
            group.barrier(Device::Cpu).unwrap();
            drop(group);
            Ok(())
        } else {
            group.barrier(Device::Cpu).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            group.sum_(&Tensor::ones([4], (Kind::Float, Device::Cpu)))
        };
        (result.map_err(|e| format!("{e:#}")), started.elapsed())
    });
    let (error, elapsed) = &results[0];
    let error = error.as_ref().unwrap_err();
    assert!(
        error.contains("all-reduce (sum) over 2 ranks (gloo, this is rank 0"),
        "{error}"
    );
    assert!(*elapsed < Duration::from_secs(25), "{elapsed:?}");
}
