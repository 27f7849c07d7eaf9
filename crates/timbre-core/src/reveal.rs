//! Shows a file in the system's file manager: its folder opened by `xdg-open` on Linux (which has
//! no common way to select a file), the file selected by `open -R` on macOS and by
//! `explorer /select,` on Windows.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Result;

/// Shows `path` in the system's file manager (its folder opened, on Linux); a not-found error
/// when the file is gone.
pub fn reveal(path: &Path) -> Result<()> {
    if !path.exists() {
        return Err(crate::error::not_found(format!(
            "{}: the file is not there any more",
            path.display()
        )));
    }
    run(file_manager_command(path), path)
}

fn file_manager_command(path: &Path) -> Command {
    let mut command;
    if cfg!(target_os = "macos") {
        command = Command::new("open");
        command.arg("-R").arg(path);
    } else if cfg!(windows) {
        command = Command::new("explorer");
        let mut select = std::ffi::OsString::from("/select,");
        select.push(path);
        command.arg(select);
    } else {
        command = Command::new("xdg-open");
        command.arg(path.parent().unwrap_or(path));
    }
    command
}

fn run(mut command: Command, path: &Path) -> Result<()> {
    let program = command.get_program().to_string_lossy().into_owned();
    let failed = |detail: String| {
        anyhow::anyhow!(
            "{}: cannot show it in the file manager: {program} {detail}",
            path.display()
        )
    };
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| failed(format!("could not start: {e}")))?;
    // Explorer's exit status says nothing; the others' says whether the folder opened.
    if cfg!(windows) {
        return Ok(());
    }
    let status = child.wait().map_err(|e| failed(e.to_string()))?;
    if status.success() {
        Ok(())
    } else {
        Err(failed(format!("failed ({status})")))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A fake `xdg-open` in its own folder that records its arguments, or fails.
    fn fake_opener(dir: &Path, exit: i32) -> std::path::PathBuf {
        let bin = dir.join(format!("bin{exit}"));
        std::fs::create_dir(&bin).unwrap();
        let script = bin.join("xdg-open");
        let log = dir.join("opened");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nexit {exit}\n",
                log.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin
    }

    #[test]
    fn the_folder_of_the_file_is_opened_and_failures_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("song (Ada).wav");
        std::fs::write(&file, b"audio").unwrap();

        let mut command = file_manager_command(&file);
        command.env("PATH", fake_opener(dir.path(), 0));
        run(command, &file).unwrap();
        let opened = std::fs::read_to_string(dir.path().join("opened")).unwrap();
        assert_eq!(opened, format!("{}\n", dir.path().display()));

        let mut command = file_manager_command(&file);
        command.env("PATH", fake_opener(dir.path(), 3));
        let err = run(command, &file).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{}: cannot show it in the file manager: xdg-open failed (exit status: 3)",
                file.display()
            )
        );

        let gone = dir.path().join("gone.wav");
        let err = reveal(&gone).unwrap_err();
        assert_eq!(crate::error::kind_of(&err), crate::ErrorKind::NotFound);
        assert!(err.to_string().starts_with(&gone.display().to_string()));
    }
}
