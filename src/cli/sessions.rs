//! `voxdesk sessions` and `voxdesk report`: the recorded sessions (a dead one shows as aborted), and one session as a self-contained HTML report.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::Exit;
use voxdesk_record::session;

pub fn list() -> Result<Exit> {
    let dir = session::sessions_dir();
    let all = session::list(&dir);
    if all.is_empty() {
        eprintln!("no sessions yet in {}", dir.display());
    }
    for r in all {
        match r {
            Ok(s) => println!(
                "{}  {:<8} steps {:>3}  verified {}  {:?}",
                s.id,
                s.status.name(),
                s.steps.len(),
                s.verified_rate()
                    .map(|v| format!("{:.0}%", v * 100.0))
                    .unwrap_or_else(|| "n/a".into()),
                s.task
            ),
            Err(e) => println!("(unreadable) {e}"),
        }
    }
    Ok(Exit::Ok)
}

/// Write the report of session `id` (an id or a session directory) to `out` (default:
/// report.html in the session's directory, private like the rest of the record).
pub fn report(id: &str, out: Option<PathBuf>) -> Result<Exit> {
    let dir = if std::path::Path::new(id).join("session.json").is_file() {
        PathBuf::from(id)
    } else {
        session::sessions_dir().join(id)
    };
    anyhow::ensure!(
        dir.join("session.json").is_file(),
        "no session {id:?}: not a session directory, nor an id in {} (see `voxdesk sessions`)",
        session::sessions_dir().display()
    );
    let record = session::load(&dir)?;
    let out = out.unwrap_or_else(|| dir.join("report.html"));
    voxdesk_core::private::write(
        &out,
        voxdesk_record::report::render(&dir, &record).as_bytes(),
    )
    .with_context(|| format!("writing {}", out.display()))?;
    println!("{}", out.display());
    Ok(Exit::Ok)
}
