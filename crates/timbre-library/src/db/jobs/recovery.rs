//! A job whose process died while running it: counted, then re-queued to wait for the user,
//! interrupted, or failed once it has crashed [`MAX_CRASHES`] processes.

use super::{Job, JobState, SELECT, require, row};
use anyhow::Result;
use rusqlite::{Connection, params};

/// A job that was running in this many processes that died is not run again.
pub const MAX_CRASHES: u32 = 3;

/// What became of a job a dead worker left running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovered {
    /// Back in the queue, waiting for the user to resume or drop it.
    Waiting,
    /// Not resumable: it ended interrupted.
    Interrupted,
    /// It was running in [`MAX_CRASHES`] processes that died: it failed.
    Crashed,
}

/// Jobs a dead worker left running: each counts one more crash; resumable kinds go back to the
/// queue (flagged recovered), others end interrupted, and one that crashed [`MAX_CRASHES`]
/// processes fails.
pub fn recover_from_dead_worker(
    conn: &Connection,
    worker: &str,
    resumable: &dyn Fn(&str) -> bool,
) -> Result<Vec<(i64, Recovered)>> {
    let mut stmt =
        conn.prepare("SELECT id, kind, crashes FROM jobs WHERE state = 'running' AND worker = ?1")?;
    let orphans: Vec<(i64, String, u32)> = stmt
        .query_map([worker], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut recovered = Vec::new();
    for (id, kind, crashes) in orphans {
        let crashes = crashes + 1;
        let (outcome, state, error) = if crashes >= MAX_CRASHES {
            let error = format!("crashed the app {crashes} times: not run again");
            (Recovered::Crashed, JobState::Failed, Some(error))
        } else if resumable(&kind) {
            (Recovered::Waiting, JobState::Queued, None)
        } else {
            let error = "the app stopped while this job ran".to_string();
            (Recovered::Interrupted, JobState::Interrupted, Some(error))
        };
        conn.execute(
            "UPDATE jobs SET state = ?2, worker = NULL, cancel_requested = 0, crashes = ?3,
                 recovered = (?2 = 'queued'), error = ?4,
                 error_kind = CASE WHEN ?4 IS NULL THEN NULL ELSE 'internal' END,
                 finished_at = CASE WHEN ?2 = 'queued' THEN NULL ELSE ?5 END
             WHERE id = ?1",
            params![id, state.as_str(), crashes, error, crate::db::now()],
        )?;
        recovered.push((id, outcome));
    }
    Ok(recovered)
}

/// Jobs re-queued after a crash that wait for the user: oldest first.
pub fn waiting_after_crash(conn: &Connection) -> Result<Vec<Job>> {
    let mut stmt = conn.prepare(&format!(
        "{SELECT} WHERE state = 'queued' AND recovered ORDER BY id"
    ))?;
    Ok(stmt.query_map([], row)?.collect::<rusqlite::Result<_>>()?)
}

/// The jobs left running by a process that is no longer alive, as judged by `is_dead`.
pub fn running_under_dead_workers(
    conn: &Connection,
    is_dead: &dyn Fn(&str) -> bool,
) -> Result<Vec<Job>> {
    let mut stmt = conn.prepare(&format!(
        "{SELECT} WHERE state = 'running' AND worker IS NOT NULL ORDER BY id"
    ))?;
    let running: Vec<Job> = stmt.query_map([], row)?.collect::<rusqlite::Result<_>>()?;
    Ok(running
        .into_iter()
        .filter(|j| j.worker.as_deref().is_some_and(is_dead))
        .collect())
}

fn require_waiting(conn: &Connection, id: i64, verb: &str) -> Result<Job> {
    let job = require(conn, id)?;
    if job.state != JobState::Queued || !job.recovered {
        return Err(crate::error::invalid_input(format!(
            "job {id} is {} and not waiting after an interruption: there is nothing to {verb}",
            job.state.as_str()
        )));
    }
    Ok(job)
}

/// Lets workers take a job that waits after a crash again.
pub fn resume(conn: &Connection, id: i64) -> Result<Job> {
    require_waiting(conn, id, "resume")?;
    conn.execute("UPDATE jobs SET recovered = 0 WHERE id = ?1", [id])?;
    require(conn, id)
}

/// Gives up a job that waits after a crash: it ends cancelled.
pub fn drop_waiting(conn: &Connection, id: i64) -> Result<Job> {
    require_waiting(conn, id, "drop")?;
    conn.execute(
        "UPDATE jobs SET state = 'cancelled', recovered = 0, finished_at = ?2,
             error = 'dropped after the app stopped while it ran', error_kind = 'cancelled'
         WHERE id = ?1",
        params![id, crate::db::now()],
    )?;
    require(conn, id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::jobs::{Claim, JobKind, Lane, claim, insert, running_workers};
    use serde_json::json;

    #[test]
    fn recovery_requeues_resumable_kinds_and_interrupts_others() {
        let conn = crate::db::open_in_memory();
        let a = insert(&conn, JobKind::Import, Lane::Light, &json!({}), 3).unwrap();
        let b = insert(&conn, JobKind::Train, Lane::Light, &json!({}), 3).unwrap();
        claim(&conn, Claim::Next(Some(Lane::Light)), "dead").unwrap();
        claim(&conn, Claim::Next(Some(Lane::Light)), "dead").unwrap();
        assert_eq!(running_workers(&conn).unwrap(), vec!["dead"]);
        let dead = running_under_dead_workers(&conn, &|w| w == "dead").unwrap();
        assert_eq!(dead.len(), 2);
        let got = recover_from_dead_worker(&conn, "dead", &|k| k == "import").unwrap();
        assert_eq!(
            got,
            vec![(a, Recovered::Waiting), (b, Recovered::Interrupted)]
        );
        let waiting = waiting_after_crash(&conn).unwrap();
        assert_eq!(waiting.iter().map(|j| j.id).collect::<Vec<_>>(), vec![a]);
        assert_eq!(waiting[0].crashes, 1);
    }

    #[test]
    fn a_waiting_job_is_left_to_workers_until_resumed_or_taken_on_request() {
        let conn = crate::db::open_in_memory();
        let a = insert(&conn, JobKind::Import, Lane::Light, &json!({}), 3).unwrap();
        claim(&conn, Claim::Next(None), "dead").unwrap();
        recover_from_dead_worker(&conn, "dead", &|_| true).unwrap();
        assert!(claim(&conn, Claim::Next(None), "w").unwrap().is_none());
        assert!(drop_waiting(&conn, 999).is_err());
        let resumed = resume(&conn, a).unwrap();
        assert!(!resumed.recovered);
        assert!(resume(&conn, a).is_err(), "already resumed");
        assert_eq!(claim(&conn, Claim::Next(None), "w").unwrap().unwrap().id, a);
        recover_from_dead_worker(&conn, "w", &|_| true).unwrap();
        assert_eq!(claim(&conn, Claim::Any, "w2").unwrap().unwrap().id, a);
        assert!(!require(&conn, a).unwrap().recovered);
    }

    #[test]
    fn a_dropped_job_ends_cancelled() {
        let conn = crate::db::open_in_memory();
        let a = insert(&conn, JobKind::Import, Lane::Light, &json!({}), 3).unwrap();
        claim(&conn, Claim::Next(None), "dead").unwrap();
        recover_from_dead_worker(&conn, "dead", &|_| true).unwrap();
        let dropped = drop_waiting(&conn, a).unwrap();
        assert_eq!(
            (dropped.state, dropped.recovered),
            (JobState::Cancelled, false)
        );
        assert!(waiting_after_crash(&conn).unwrap().is_empty());
    }

    #[test]
    fn the_third_crash_fails_the_job() {
        let conn = crate::db::open_in_memory();
        let a = insert(&conn, JobKind::Import, Lane::Light, &json!({}), 3).unwrap();
        for crash in 1..=MAX_CRASHES {
            claim(&conn, Claim::Any, "dead").unwrap().unwrap();
            let got = recover_from_dead_worker(&conn, "dead", &|_| true).unwrap();
            let expected = if crash < MAX_CRASHES {
                Recovered::Waiting
            } else {
                Recovered::Crashed
            };
            assert_eq!(got, vec![(a, expected)]);
        }
        let job = require(&conn, a).unwrap();
        assert_eq!((job.state, job.crashes), (JobState::Failed, 3));
        assert_eq!(
            job.error.as_deref(),
            Some("crashed the app 3 times: not run again")
        );
        assert!(claim(&conn, Claim::Any, "w").unwrap().is_none());
    }
}
