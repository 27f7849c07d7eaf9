//! The public half of the key the project signs its update feed with. Compiled in, so that
//! neither the feed's server nor whoever sits between it and the app can swap the key along
//! with the manifest; the private half never enters this repository. Hex:
//! `28c4082846f0268ab6131d0373c9179487394c71c0ad3dd3af261a3dde934ff2`.

/// The Ed25519 public key every feed signature must verify against, unless
/// `TIMBRE_UPDATE_KEY` replaces it (tests, a private channel).
pub(super) const PUBLIC_KEY: [u8; 32] = [
    0x28, 0xc4, 0x08, 0x28, 0x46, 0xf0, 0x26, 0x8a, 0xb6, 0x13, 0x1d, 0x03, 0x73, 0xc9, 0x17, 0x94,
    0x87, 0x39, 0x4c, 0x71, 0xc0, 0xad, 0x3d, 0xd3, 0xaf, 0x26, 0x1a, 0x3d, 0xde, 0x93, 0x4f, 0xf2,
];
