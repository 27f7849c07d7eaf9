// Shared by the build scripts of the two binaries (`timbre` and the app, each `include!`s it):
// sets `TIMBRE_GIT_COMMIT`, which `--version` and the About box print beside the version. The
// packaging script passes it in; a source build asks git, again whenever HEAD moves.
fn git_commit() {
    println!("cargo:rerun-if-env-changed=TIMBRE_GIT_COMMIT");
    let commit = std::env::var("TIMBRE_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| {
            let git = |args: &[&str]| {
                std::process::Command::new("git")
                    .args(args)
                    .output()
                    .ok()
                    .filter(|out| out.status.success())
                    .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
            };
            let git_dir = git(&["rev-parse", "--absolute-git-dir"])?;
            println!("cargo:rerun-if-changed={git_dir}/HEAD");
            if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
                println!("cargo:rerun-if-changed={git_dir}/{reference}");
            }
            git(&["rev-parse", "--short=12", "HEAD"])
        })
        .unwrap_or_else(|| "unknown commit".to_owned());
    println!("cargo:rustc-env=TIMBRE_GIT_COMMIT={commit}");
}
