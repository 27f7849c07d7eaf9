//! `timbre train start --devices cpu,cpu`: the job runs rank 0 and starts a `timbre train
//! worker` process for rank 1, both on the CPU over Gloo; rank 0 alone writes the checkpoints,
//! the metrics and the model. As torchrun or SLURM launch a run: a queued training and a
//! `timbre train worker` process per rank, rank 0's running the job. A worker started by hand without a rendezvous, or at a port
//! nobody serves, says so. Then a worker killed mid-run: the job fails at once naming the
//! rank, its last checkpoint stays whole, and the training resumes from it on one device.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::train::{checkpoint_steps, command, json, ok, sandbox, training_row};

/// The command lines of this user's processes that run `timbre train worker` for `training`.
fn worker_pids(training: i64) -> Vec<u32> {
    let wanted = format!("train\0worker\0--training\0{training}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&cmdline)
                .contains(&wanted)
                .then_some(pid)
        })
        .collect()
}

#[test]
fn cpu_ranks_train_spawned_or_launched_and_a_killed_worker_ends_the_run_resumably() {
    let sb = sandbox();
    let file = sb.write_speech("speech.wav", 64.0);
    sb.prepare_dataset("Alto set", "40k", &file);
    let config = sb.path("tiny40k.json").display().to_string();
    let start = |name: &str, epochs: &str| {
        vec![
            "train".to_string(),
            "start".into(),
            "--dataset".into(),
            "Alto set".into(),
            "--name".into(),
            name.into(),
            "--epochs".into(),
            epochs.into(),
            "--save-every".into(),
            "1".into(),
            "--batch-size".into(),
            "4".into(),
            "--pretrained".into(),
            "none".into(),
            "--devices".into(),
            "cpu,cpu".into(),
            "--model-config".into(),
            config.clone(),
        ]
    };

    let args = start("Two ranks", "2");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let trained = ok(&sb, &args);
    let training = &trained["training"];
    assert_eq!(training["status"], "done", "{trained}");
    assert_eq!(training["device"], "cpu,cpu");
    let id = training["id"].as_i64().unwrap();
    let shown = training_row(&sb, id);
    let folder = PathBuf::from(shown["folder"].as_str().unwrap());
    assert_eq!(checkpoint_steps(&folder).len(), 2, "one pair an epoch");
    assert!(folder.join("worker-1.log").is_file());
    let job = ok(&sb, &["jobs", "show", &training["job_id"].to_string()]);
    let events = job["events"].as_array().unwrap();
    let parallel = events.iter().find(|e| e["kind"] == "data_parallel");
    assert_eq!(parallel.unwrap()["data"]["ranks"], 2, "{events:?}");
    assert!(worker_pids(id).is_empty(), "the worker ended with the run");
    // Each epoch's profile has the gradients' all-reduce, within its steps.
    for epoch in training["profile"].as_array().unwrap() {
        let (all_reduce, steps) = (
            epoch["all_reduce_secs"].as_f64(),
            epoch["step_secs"].as_f64(),
        );
        assert!(
            matches!((all_reduce, steps), (Some(a), Some(s)) if a > 0.0 && a < s),
            "{epoch}"
        );
    }

    // As torchrun or SLURM launch it: a queued training, `timbre train worker` for each rank.
    let mut args = start("Launched", "1");
    args.truncate(args.len() - 4);
    args.extend([
        "--model-config".to_string(),
        config.clone(),
        "--queue".into(),
    ]);
    let queued = ok(&sb, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(queued["status"], "queued", "{queued}");
    let launched = queued["id"].as_i64().unwrap();
    let port = timbre_test_support::free_port();
    let ranks: Vec<_> = (0..2)
        .map(|rank| {
            command(
                &sb,
                &["train", "worker", "--training", &launched.to_string()],
            )
            .args(["--device", "cpu"])
            .envs([
                ("MASTER_ADDR", "127.0.0.1".to_string()),
                ("MASTER_PORT", port.to_string()),
                ("WORLD_SIZE", "2".into()),
                ("RANK", rank.to_string()),
                ("LOCAL_RANK", rank.to_string()),
                ("TIMBRE_COLLECTIVE_TIMEOUT_SECS", "60".into()),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    for (rank, child) in ranks.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "rank {rank}: {stderr}");
    }
    let row = training_row(&sb, launched)["training"].clone();
    assert_eq!(row["status"], "done", "{row}");
    assert_eq!(row["device"], "cpu (rank 0 of 2)");

    // A worker started by hand: without torchrun's variables, and at a port nobody serves.
    let (ok_alone, _, stderr) = json(&sb, &["train", "worker", "--training", &id.to_string()]);
    assert!(
        !ok_alone && stderr.contains("MASTER_ADDR is not set"),
        "{stderr}"
    );
    let port = timbre_test_support::free_port();
    let started = Instant::now();
    let out = command(&sb, &["train", "worker", "--training", &id.to_string()])
        .envs([
            ("MASTER_ADDR", "127.0.0.1".to_string()),
            ("MASTER_PORT", port.to_string()),
            ("WORLD_SIZE", "2".into()),
            ("RANK", "1".into()),
            ("TIMBRE_COLLECTIVE_TIMEOUT_SECS", "2".into()),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!(
            "joining the rendezvous at 127.0.0.1:{port} (MASTER_ADDR, MASTER_PORT) as rank 1 of 2"
        )),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );

    // A long run whose worker is killed after the first checkpoint.
    let args = start("Killed worker", "400");
    let mut cli = command(&sb, &args.iter().map(String::as_str).collect::<Vec<_>>())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let (id, folder) = loop {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no checkpoint"
        );
        std::thread::sleep(Duration::from_millis(200));
        let (_, list, _) = json(&sb, &["train", "list"]);
        let Some(row) = list
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["name"] == "Killed worker"))
        else {
            continue;
        };
        let id = row["id"].as_i64().unwrap();
        let folder = PathBuf::from(training_row(&sb, id)["folder"].as_str().unwrap());
        if !checkpoint_steps(&folder).is_empty() {
            break (id, folder);
        }
    };
    let workers = worker_pids(id);
    assert_eq!(workers.len(), 1, "one worker for rank 1");
    let killed = Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-9", &workers[0].to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = cli.wait().unwrap();
    let ended_in = killed.elapsed();
    assert!(!exit.success(), "the run failed");
    assert!(ended_in < Duration::from_secs(30), "it took {ended_in:?}");
    let row = training_row(&sb, id)["training"].clone();
    assert_eq!(row["status"], "failed", "{row}");
    let error = row["error"].as_str().unwrap();
    assert!(
        error.contains("rank 1 (cpu) was killed") && error.contains("worker-1.log"),
        "{error}"
    );
    let saved = checkpoint_steps(&folder);
    assert!(!saved.is_empty());

    // On one device it goes on from the last checkpoint (then it is stopped: its epochs are
    // many).
    let mut resumed = command(
        &sb,
        &["train", "resume", &id.to_string(), "--devices", "cpu"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let last_saved = *saved.last().unwrap();
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no step after resuming"
        );
        std::thread::sleep(Duration::from_millis(200));
        let row = training_row(&sb, id)["training"].clone();
        if row["status"] == "running" && row["global_step"].as_i64().unwrap() > last_saved {
            assert_eq!(row["device"], "cpu", "{row}");
            break;
        }
    }
    ok(&sb, &["train", "stop", &id.to_string()]);
    resumed.wait().unwrap();
    let row = training_row(&sb, id)["training"].clone();
    assert_eq!(row["status"], "stopped", "{row}");
    let job = ok(&sb, &["jobs", "show", &row["job_id"].to_string()]);
    let events = job["events"].as_array().unwrap();
    let resumed_at = events.iter().find(|e| e["kind"] == "resumed").unwrap();
    assert_eq!(
        resumed_at["data"]["step"].as_i64(),
        Some(last_saved),
        "{events:?}"
    );
}
