//! `voxdesk serve`: the one process that owns the screen's session, as an authenticated HTTP API with a live event stream and a web panel; the CLI, a browser or a phone are its clients.

pub mod api;
pub mod auth;
pub mod client;
pub mod health;
pub mod hub;
pub mod runner;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use super::{settings, Exit};
use voxdesk::record::session::{self, sessions_dir};

pub struct ServeArgs {
    pub bind: String,
    pub quiet: bool,
    pub confirm_timeout_ms: u64,
    pub step_cap: usize,
}

/// Where a running daemon says where it listens (`$XDG_RUNTIME_DIR/voxdesk/serve.json`).
pub fn discovery_path() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join("voxdesk")
        .join("serve.json")
}

/// A daemon that runs now: its base URL and token (`None`: none runs, or it is not ours).
pub fn running_daemon() -> Option<(String, String)> {
    let text = std::fs::read_to_string(discovery_path()).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let pid = v["pid"].as_u64()? as u32;
    let start = v["pid_start"].as_u64()?;
    if voxdesk::input::lock::process_start(pid) != Some(start) {
        return None;
    }
    let token = auth::load_or_create(&auth::token_path()?).ok()?;
    Some((v["url"].as_str()?.to_string(), token))
}

pub fn serve(a: ServeArgs, config: Option<&std::path::Path>) -> Result<Exit> {
    let loaded = settings(config, None)?;
    let addr: SocketAddr = a
        .bind
        .parse()
        .with_context(|| format!("--bind {:?}: not an address like 127.0.0.1:7878", a.bind))?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "voxdesk serve: WARNING: listening on {addr}, beyond this machine. Anyone who can reach it and has the token can drive this desktop; the traffic is not encrypted."
        );
    }
    let token_path = auth::token_path().context("no config directory for the token")?;
    let token = auth::load_or_create(&token_path)
        .with_context(|| format!("the token at {}", token_path.display()))?;
    let root = sessions_dir();
    // A session the last daemon left running is aborted now, not shown as live.
    let aborted = session::list(&root)
        .into_iter()
        .flatten()
        .filter(|r| r.status == session::Status::Aborted && r.ended_ms.is_none())
        .count();
    if aborted > 0 {
        tracing::info!("{aborted} session(s) left running by a dead process are aborted");
    }
    let hub = Arc::new(hub::Hub::new(hub::KEEP));
    let mut runner = runner::Runner::new(loaded.clone(), root, hub.clone(), !a.quiet);
    runner.confirm_timeout = Duration::from_millis(a.confirm_timeout_ms);
    runner.step_cap = a.step_cap;
    let health = health::Health::start(
        loaded.settings.stop.combo.to_string(),
        loaded.settings.stop.hold_ms,
    );
    let app = Arc::new(api::App {
        token,
        runner,
        hub,
        health,
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        let local = listener.local_addr()?;
        let url = format!("http://{local}");
        let disc = discovery_path();
        if let Some(d) = disc.parent() {
            voxdesk::private::dir(d)?;
        }
        let me = std::process::id();
        voxdesk::private::write(
            &disc,
            serde_json::json!({"url": url, "pid": me,
                "pid_start": voxdesk::input::lock::process_start(me)})
            .to_string()
            .as_bytes(),
        )?;
        println!("voxdesk serve: {url} (token in {})", token_path.display());
        let a2 = app.clone();
        let shutdown = async move {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                return std::future::pending().await;
            };
            tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
            eprintln!("voxdesk serve: stopping");
            // A running session is stopped and recorded as such before the daemon goes.
            if let Some(id) = a2.runner.with_current(|c| c.id.clone()) {
                a2.runner.stop(&id);
                for _ in 0..100 {
                    if a2.runner.with_current(|_| ()).is_none() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            // Event streams never end by themselves: give requests a moment, then go.
            let disc = discovery_path();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(2)).await;
                let _ = std::fs::remove_file(disc);
                std::process::exit(0);
            });
        };
        let served = axum::serve(listener, api::router(app))
            .with_graceful_shutdown(shutdown)
            .await;
        let _ = std::fs::remove_file(&disc);
        served.context("serving")
    })?;
    Ok(Exit::Ok)
}
