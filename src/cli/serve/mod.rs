//! `voxdesk serve`: the one process that owns the screen's session, as an authenticated HTTP API with a live event stream and a web panel; the CLI, a browser or a phone are its clients.

pub mod api;
pub mod auth;
pub mod client;
pub mod health;
pub mod hub;
pub mod runner;

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use super::{settings, Exit};
use voxdesk_record::session::{self, sessions_dir};

/// How long a going daemon waits for its last requests once every event stream has ended.
const GRACE: Duration = Duration::from_secs(5);

pub struct ServeArgs {
    pub bind: String,
    pub quiet: bool,
    pub confirm_timeout_ms: u64,
    pub step_cap: usize,
}

/// Where a running daemon says where it listens: `serve.json` in the private runtime dir
/// (`$XDG_RUNTIME_DIR/voxdesk/`, never the shared temp dir, where anyone could plant one).
pub fn discovery_path() -> std::io::Result<PathBuf> {
    Ok(voxdesk_core::private::runtime_dir()?.join("serve.json"))
}

/// A daemon that runs now: its base URL and token. `Ok(None)`: none runs. An error: a
/// `serve.json` that is not to be believed (not this user's, not 0600, not a loopback URL),
/// or a runtime dir that is not private: the token is never sent where such a file points.
pub fn running_daemon() -> Result<Option<(String, String)>> {
    let path = discovery_path()?;
    let Some(url) = trusted_url(&path)? else {
        return Ok(None);
    };
    let token_path = auth::token_path().context("no config directory for the token")?;
    let token = auth::load_or_create(&token_path)
        .with_context(|| format!("the token at {}", token_path.display()))?;
    Ok(Some((url, token)))
}

/// The URL in the `serve.json` at `path` when a daemon that runs now wrote it and it is to be
/// believed; `None` when there is none or its daemon is gone.
fn trusted_url(path: &std::path::Path) -> Result<Option<String>> {
    let bytes = match voxdesk_core::private::read_own(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => anyhow::bail!("{e}; remove it (a running `voxdesk serve` writes its own)"),
    };
    let v: serde_json::Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a daemon's serve.json", path.display()))?;
    let (Some(pid), Some(start)) = (v["pid"].as_u64(), v["pid_start"].as_u64()) else {
        anyhow::bail!("{} names no daemon (pid, pid_start)", path.display());
    };
    if u32::try_from(pid)
        .ok()
        .and_then(voxdesk_input::lock::process_start)
        != Some(start)
    {
        return Ok(None);
    }
    let url = v["url"].as_str().unwrap_or_default();
    loopback_base(url).map(Some).ok_or_else(|| {
        anyhow::anyhow!(
            "{} names {url:?}, not http:// on a loopback address: the token is sent nowhere else",
            path.display()
        )
    })
}

/// `http://<loopback ip>:<port>`, nothing more, as a base URL; `None` for anything else.
fn loopback_base(url: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    let plain = u.scheme() == "http"
        && u.username().is_empty()
        && u.password().is_none()
        && u.query().is_none()
        && u.fragment().is_none()
        && matches!(u.path(), "" | "/");
    let ip = match u.host()? {
        url::Host::Ipv4(ip) => std::net::IpAddr::V4(ip),
        url::Host::Ipv6(ip) => std::net::IpAddr::V6(ip),
        url::Host::Domain(_) => return None,
    };
    let port = u.port_or_known_default()?;
    (plain && ip.is_loopback())
        .then(|| format!("http://{}:{port}", u.host_str().unwrap_or_default()))
}

/// The address a client on this machine reaches a daemon bound to `local` at: a wildcard
/// bind is reached on loopback.
fn reach(local: SocketAddr) -> SocketAddr {
    match local.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, local.port()))
        }
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, local.port()))
        }
        _ => local,
    }
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
        loaded.settings.models_dir.clone(),
    );
    let app = Arc::new(api::App {
        token,
        runner,
        hub,
        health,
        shutdown: tokio_util::sync::CancellationToken::new(),
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
        let disc = discovery_path().context("the private runtime dir for serve.json")?;
        let me = std::process::id();
        voxdesk_core::private::write(
            &disc,
            serde_json::json!({"url": format!("http://{}", reach(local)), "pid": me,
                "pid_start": voxdesk_input::lock::process_start(me)})
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
            // Every event stream drains and ends; the server then finishes by itself.
            a2.shutdown.cancel();
        };
        let going = app.shutdown.clone();
        let serving = axum::serve(listener, api::router(app))
            .with_graceful_shutdown(shutdown)
            .into_future();
        // A client that never closes its connection does not hold the daemon: once going, it
        // waits at most GRACE for the last requests.
        let served = tokio::select! {
            s = serving => s,
            () = async { going.cancelled().await; tokio::time::sleep(GRACE).await } => {
                eprintln!("voxdesk serve: a connection was still open after {GRACE:?}; leaving it");
                Ok(())
            }
        };
        let _ = std::fs::remove_file(&disc);
        served.context("serving")
    })?;
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn only_a_loopback_http_base_is_a_daemon_url() {
        let ok = [
            ("http://127.0.0.1:7878", "http://127.0.0.1:7878"),
            ("http://127.0.0.1:7878/", "http://127.0.0.1:7878"),
            ("http://127.9.0.1:80", "http://127.9.0.1:80"),
            ("http://[::1]:7878", "http://[::1]:7878"),
        ];
        for (url, want) in ok {
            assert_eq!(loopback_base(url).as_deref(), Some(want), "{url}");
        }
        for url in [
            "http://10.0.0.5:7878",
            "http://0.0.0.0:7878",
            "http://localhost.evil.example:7878",
            "http://example.com:7878",
            "https://127.0.0.1:7878",
            "http://user:pw@127.0.0.1:7878",
            "http://127.0.0.1:7878/steal",
            "http://127.0.0.1:7878/?x=1",
            "file:///etc/passwd",
            "",
            "not a url",
        ] {
            assert_eq!(loopback_base(url), None, "{url}");
        }
        assert_eq!(
            reach("0.0.0.0:7878".parse().unwrap()),
            "127.0.0.1:7878".parse().unwrap()
        );
        assert_eq!(
            reach("[::]:7878".parse().unwrap()),
            "[::1]:7878".parse().unwrap()
        );
    }

    #[test]
    fn a_serve_json_is_believed_only_when_ours_private_and_loopback() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("serve.json");
        let me = std::process::id();
        let start = voxdesk_input::lock::process_start(me).unwrap();
        let file = |url: &str, pid: u32, mode: u32| {
            let _ = std::fs::remove_file(&p);
            voxdesk_core::private::write(
                &p,
                serde_json::json!({"url": url, "pid": pid, "pid_start": start})
                    .to_string()
                    .as_bytes(),
            )
            .unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        assert_eq!(trusted_url(&p).unwrap(), None, "no file: no daemon");
        file("http://127.0.0.1:7878", me, 0o600);
        assert_eq!(
            trusted_url(&p).unwrap().as_deref(),
            Some("http://127.0.0.1:7878")
        );
        // Its daemon is gone: no daemon, not an error.
        file("http://127.0.0.1:7878", u32::MAX, 0o600);
        assert_eq!(trusted_url(&p).unwrap(), None);
        let refused = |why: &str| {
            let e = format!("{:#}", trusted_url(&p).unwrap_err());
            assert!(e.contains(why), "{e}");
        };
        file("http://127.0.0.1:7878", me, 0o644);
        refused("not 600");
        file("http://evil.example:80", me, 0o600);
        refused("not http:// on a loopback address");
        file("http://127.0.0.1:7878", me, 0o600);
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let e = format!("{:#}", trusted_url(&link).unwrap_err());
        assert!(e.contains("symlink"), "{e}");
        // Another user's (only root can make one).
        if voxdesk_core::private::uid() == 0 {
            std::os::unix::fs::chown(&p, Some(65534), None).unwrap();
            refused("belongs to uid 65534");
        }
        std::fs::write(&p, "{").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        if voxdesk_core::private::uid() == 0 {
            std::os::unix::fs::chown(&p, Some(0), None).unwrap();
        }
        refused("is not a daemon's serve.json");
    }
}
