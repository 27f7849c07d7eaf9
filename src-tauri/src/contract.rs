//! The shell's handler list and the UI's calls agree: every command the UI calls
//! (`call('…')` in `ui/src/lib/api.ts`, its one door to the backend) is registered in
//! `tauri::generate_handler!` (`src/lib.rs`), and every registered command is called by the UI,
//! so neither side can drift after a command is added, renamed or removed.

use std::collections::BTreeSet;

const LIB_RS: &str = include_str!("lib.rs");
const API_TS: &str = include_str!("../../ui/src/lib/api.ts");

/// The commands `generate_handler!` registers: the last segment of each `commands::…::name`.
fn registered() -> BTreeSet<String> {
    let list = LIB_RS
        .split("generate_handler![")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("src/lib.rs registers its commands with generate_handler!");
    list.split(',')
        .map(str::trim)
        .filter(|path| !path.is_empty())
        .map(|path| path.rsplit("::").next().unwrap_or(path).to_string())
        .collect()
}

/// The commands `ui/src/lib/api.ts` calls: `call('name'` and `call<T>('name'`.
fn called() -> BTreeSet<String> {
    API_TS
        .split("call")
        .skip(1)
        .filter_map(|rest| {
            let rest = rest.strip_prefix('<').map_or(Some(rest), |typed| {
                typed.split_once(">(").map(|(_, after)| after)
            })?;
            let rest = rest.strip_prefix('(').unwrap_or(rest);
            let name = rest.strip_prefix('\'')?.split('\'').next()?;
            (!name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
                .then(|| name.to_string())
        })
        .collect()
}

#[test]
fn the_ui_calls_exactly_the_registered_commands() {
    let (registered, called) = (registered(), called());
    assert!(
        registered.len() > 50 && called.len() > 50,
        "{registered:?} {called:?}"
    );
    let unregistered: Vec<_> = called.difference(&registered).collect();
    let uncalled: Vec<_> = registered.difference(&called).collect();
    assert!(
        unregistered.is_empty() && uncalled.is_empty(),
        "the UI calls commands src/lib.rs does not register: {unregistered:?}; \
         src/lib.rs registers commands the UI never calls: {uncalled:?}"
    );
}
