//! The `voice_import` job: what the app starts for a dropped `.zip` or a pasted link, as an
//! import can download and unpack for minutes; progress, cancel, the report as its result.

use anyhow::Result;
use serde_json::Value;

use super::{VoiceImportRequest, VoiceSource, import};
use crate::db::jobs::Job;
use crate::fetch::UrlPolicy;
use crate::jobs::{JobContext, JobHandler, JobKind, JobSystem};

/// The job kind.
pub const KIND: JobKind = JobKind::VoiceImport;

/// Queues an import, its source checked first (a path that exists, or a link); paths are made
/// absolute so the job reads the same files from any working directory.
pub fn submit(system: &JobSystem, request: VoiceImportRequest) -> Result<Job> {
    let policy = UrlPolicy::of(&system.library().settings()?);
    let source = match VoiceSource::parse(&request.source, &policy)? {
        VoiceSource::Url(url) => url,
        local => local.label(),
    };
    let index = request
        .index
        .as_deref()
        .map(std::path::absolute)
        .transpose()?;
    let request = VoiceImportRequest {
        source,
        index,
        ..request
    };
    system.submit(KIND, serde_json::to_value(&request)?)
}

/// Runs `voice_import` jobs: the request in the job's params, the report as its result.
pub struct VoiceImportHandler;

impl JobHandler for VoiceImportHandler {
    fn kind(&self) -> JobKind {
        KIND
    }

    fn run(&self, ctx: &JobContext) -> Result<Value> {
        let request: VoiceImportRequest = ctx.params()?;
        let report = import(ctx.library(), &request, &mut |fraction, message| {
            ctx.progress(fraction, message)
        })?;
        Ok(serde_json::to_value(report)?)
    }
}
