//! `timbre doctor`: what the machine and the library can do, and what each job kind lacks.

use timbre_integration_tests::Sandbox;

fn doctor(sb: &Sandbox) -> serde_json::Value {
    let out = sb
        .cpu_command()
        .args(["--json", "doctor"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn job<'a>(report: &'a serde_json::Value, kind: &str) -> &'a serde_json::Value {
    report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {report}"))
}

#[test]
fn doctor_says_what_each_job_lacks_until_the_assets_are_there() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.models_dir()).unwrap();
    let report = doctor(&sb);
    assert_eq!(report["devices"]["main"], "cpu");
    assert!(report["data_dir_free_bytes"].as_u64().unwrap() > 0);
    let hubert = report["assets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "hubert")
        .unwrap();
    assert_eq!(hubert["state"], "missing");
    for kind in ["convert", "dataset"] {
        let job = job(&report, kind);
        assert_eq!(job["ready"], false, "{job}");
        assert!(
            job["lacks"][0].as_str().unwrap().contains("hubert_base.pt"),
            "{job}"
        );
    }
    for kind in ["import", "enhance", "isolate", "train", "download"] {
        assert_eq!(job(&report, kind)["ready"], true, "{kind}");
    }

    std::fs::write(sb.models_dir().join("hubert_base.pt"), b"weights").unwrap();
    let report = doctor(&sb);
    let convert = job(&report, "convert");
    assert_eq!(convert["ready"], true, "{convert}");
    assert!(convert["would_use"][0].as_str().unwrap().contains("RMVPE"));
}
