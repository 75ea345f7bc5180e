//! The daemon's HTTP routes (axum): the token check in front of every `/observe` route, sessions started, listed, stopped and confirmed, step pictures and reports, the event stream that resumes from `Last-Event-ID`, health without side effects, and the panel at `/`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::stream::{self, Stream};
use serde_json::{json, Value};

use super::auth::{self, Route};
use super::health::Health;
use super::hub::{Hub, Item, Seen};
use super::runner::{Runner, StartError, StartRequest};
use voxdesk_record::session::{self, SessionRecord};

/// Request bodies larger than this are refused (413): a task is a sentence.
pub const MAX_BODY: usize = 16 * 1024;

pub struct App {
    pub token: String,
    pub runner: Runner,
    pub hub: Arc<Hub>,
    pub health: Health,
    /// Cancelled when the daemon is going: every event stream sends what the hub still holds
    /// for it, then ends, so the server's graceful shutdown completes by itself.
    pub shutdown: tokio_util::sync::CancellationToken,
}

type Shared = Arc<App>;

pub fn router(app: Shared) -> Router {
    let api = Router::new()
        .route("/observe/sessions", post(start).get(list))
        .route("/observe/sessions/{id}", get(one))
        .route("/observe/sessions/{id}/steps/{file}", get(step_png))
        .route("/observe/sessions/{id}/report", get(report))
        .route("/observe/sessions/{id}/stop", post(stop))
        .route("/observe/sessions/{id}/confirm", post(confirm))
        .route("/observe/events", get(events))
        .route("/observe/health", get(health))
        .route_layer(middleware::from_fn_with_state(app.clone(), authorize));
    Router::new()
        .route("/", get(panel))
        .route("/panel.js", get(panel_js))
        .merge(api)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn(guard))
        .with_state(app)
}

/// The panel's page: its own script and styles, pictures it draws from its own API (blobs),
/// connections to itself only; and no page may frame it (another local page framed it, logged
/// in, with its Yes button showing).
pub const PANEL_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' blob: data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
/// Everything else the daemon answers (JSON, pictures) is no page at all.
const DATA_CSP: &str = "default-src 'none'; frame-ancestors 'none'; sandbox";

/// Every answer: framed by no one (`frame-ancestors 'none'`, and `X-Frame-Options` for older
/// browsers), its type never sniffed, no referrer sent on; a policy of its own or
/// [`DATA_CSP`]; answers of the API never cached.
async fn guard(req: Request, next: Next) -> Response {
    let api = req.uri().path().starts_with("/observe");
    let mut r = next.run(req).await;
    let h = r.headers_mut();
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            header::HeaderValue::from_static(DATA_CSP),
        );
    }
    for (k, v) in [
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
    ] {
        h.insert(k, header::HeaderValue::from_static(v));
    }
    if api {
        h.insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("no-store"),
        );
    }
    r
}

fn error(code: StatusCode, why: impl Into<String>) -> Response {
    (code, Json(json!({"error": why.into()}))).into_response()
}

async fn authorize(State(app): State<Shared>, req: Request, next: Next) -> Response {
    let route = if req.uri().path() == "/observe/events" {
        Route::Stream
    } else {
        Route::Other
    };
    let h = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if auth::allowed(&app.token, h, req.uri().query(), route) {
        next.run(req).await
    } else {
        let mut r = error(
            StatusCode::UNAUTHORIZED,
            "a bearer token is needed (Authorization: Bearer <token>; the token is in the config dir's serve.token)",
        );
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, "Bearer".parse().unwrap());
        r
    }
}

async fn panel() -> Response {
    (
        [(header::CONTENT_SECURITY_POLICY, PANEL_CSP)],
        Html(include_str!("panel.html")),
    )
        .into_response()
}

async fn panel_js() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, PANEL_CSP),
        ],
        include_str!("panel.js"),
    )
        .into_response()
}

async fn start(State(app): State<Shared>, body: Bytes) -> Response {
    let req: StartRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("the body is not a session request ({{task, provider, model, mode}}): {e}"),
            )
        }
    };
    let a = app.clone();
    let started = tokio::task::spawn_blocking(move || a.runner.start(req)).await;
    match started {
        Ok(Ok(id)) => match load(&app, &id) {
            Some(r) => (StatusCode::CREATED, Json(describe(&app, &r))).into_response(),
            None => error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the session's record is missing",
            ),
        },
        Ok(Err(StartError::Bad(why))) => error(StatusCode::BAD_REQUEST, why),
        Ok(Err(StartError::Busy(why))) => error(StatusCode::CONFLICT, why),
        Ok(Err(StartError::Failed(why))) => error(StatusCode::INTERNAL_SERVER_ERROR, why),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// A session id is a directory name under the records: nothing else is looked up.
fn dir(app: &App, id: &str) -> Option<PathBuf> {
    let plain = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !id.starts_with('.');
    let d = app.runner.root.join(id);
    (plain && d.join("session.json").is_file()).then_some(d)
}

fn load(app: &App, id: &str) -> Option<SessionRecord> {
    session::load(&dir(app, id)?).ok()
}

/// A session as the API shows it: its record, and its pending confirmation when it runs.
fn describe(app: &App, r: &SessionRecord) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
    let pending = app
        .runner
        .with_current(|c| (c.id == r.id).then(|| c.asker.pending()).flatten())
        .flatten();
    if let Some(o) = v.as_object_mut() {
        o.insert("verified_rate".into(), json!(r.verified_rate()));
        o.insert("pending_confirmation".into(), json!(pending));
    }
    v
}

async fn list(State(app): State<Shared>) -> Response {
    let a = app.clone();
    let all = tokio::task::spawn_blocking(move || session::list(&a.runner.root))
        .await
        .unwrap_or_default();
    let rows: Vec<Value> = all
        .into_iter()
        .map(|r| match r {
            Ok(s) => json!({
                "id": s.id, "status": s.status, "task": s.task, "provider": s.provider,
                "model": s.model, "mode": s.mode, "started_ms": s.started_ms,
                "ended_ms": s.ended_ms, "summary": s.summary, "steps": s.steps.len(),
                "verified_rate": s.verified_rate(),
            }),
            Err(e) => json!({"error": e.to_string()}),
        })
        .collect();
    Json(json!({ "sessions": rows })).into_response()
}

async fn one(State(app): State<Shared>, Path(id): Path<String>) -> Response {
    match load(&app, &id) {
        Some(r) => Json(describe(&app, &r)).into_response(),
        None => error(StatusCode::NOT_FOUND, format!("no session {id:?}")),
    }
}

async fn step_png(State(app): State<Shared>, Path((id, file)): Path<(String, String)>) -> Response {
    let (Some(d), Some(r)) = (dir(&app, &id), load(&app, &id)) else {
        return error(StatusCode::NOT_FOUND, format!("no session {id:?}"));
    };
    let Some(n) = file
        .strip_suffix(".png")
        .and_then(|n| n.parse::<usize>().ok())
    else {
        return error(StatusCode::NOT_FOUND, "steps are named N.png");
    };
    let Some(name) = r
        .steps
        .iter()
        .find(|s| s.index == n)
        .and_then(|s| s.screenshot.clone())
    else {
        return error(
            StatusCode::NOT_FOUND,
            format!("session {id} has no picture of step {n}"),
        );
    };
    // Only a file inside the session's directory, whatever its record names.
    match tokio::task::spawn_blocking(move || session::picture(&d, &name)).await {
        Ok(Ok(bytes)) => ([(header::CONTENT_TYPE, "image/png")], bytes).into_response(),
        Ok(Err(e)) => error(StatusCode::NOT_FOUND, e.to_string()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// A report as a document: the report's own policy, framed by no one, and sandboxed (an opaque
/// origin: nothing of the panel's is reachable from it).
fn report_csp() -> String {
    format!(
        "{}; frame-ancestors 'none'; sandbox",
        voxdesk_record::report::CSP
    )
}

async fn report(State(app): State<Shared>, Path(id): Path<String>) -> Response {
    let (Some(d), Some(r)) = (dir(&app, &id), load(&app, &id)) else {
        return error(StatusCode::NOT_FOUND, format!("no session {id:?}"));
    };
    let html = tokio::task::spawn_blocking(move || voxdesk_record::report::render(&d, &r))
        .await
        .unwrap_or_default();
    let mut resp = Html(html).into_response();
    if let Ok(v) = header::HeaderValue::from_str(&report_csp()) {
        resp.headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, v);
    }
    resp
}

async fn stop(State(app): State<Shared>, Path(id): Path<String>) -> Response {
    if app.runner.stop(&id) {
        return Json(json!({"stopping": id})).into_response();
    }
    match load(&app, &id) {
        Some(r) => error(
            StatusCode::CONFLICT,
            format!("session {id} is not running (it is {})", r.status),
        ),
        None => error(StatusCode::NOT_FOUND, format!("no session {id:?}")),
    }
}

async fn confirm(State(app): State<Shared>, Path(id): Path<String>, body: Bytes) -> Response {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Answer {
        yes: bool,
    }
    let a: Answer = match serde_json::from_slice(&body) {
        Ok(a) => a,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("the body is {{\"yes\": true|false}}: {e}"),
            )
        }
    };
    let answered = app
        .runner
        .with_current(|c| (c.id == id).then(|| c.asker.answer(a.yes)))
        .flatten();
    match answered {
        Some(true) => Json(json!({"answered": a.yes})).into_response(),
        Some(false) => error(
            StatusCode::CONFLICT,
            format!("session {id} is not asking anything now"),
        ),
        None if load(&app, &id).is_some() => {
            error(StatusCode::CONFLICT, format!("session {id} is not running"))
        }
        None => error(StatusCode::NOT_FOUND, format!("no session {id:?}")),
    }
}

async fn health(State(app): State<Shared>) -> Response {
    let mut v = app.health.report(&app.runner);
    v["last_event_id"] = json!(app.hub.last_id());
    Json(v).into_response()
}

/// What a stream still has to send.
struct Feed {
    app: Shared,
    queue: VecDeque<Arc<Item>>,
    live: tokio::sync::broadcast::Receiver<Arc<Item>>,
    last: u64,
    gap: bool,
    /// The daemon is going: send what is queued, then end.
    draining: bool,
}

fn sse(i: &Item) -> SseEvent {
    SseEvent::default()
        .id(i.id.to_string())
        .event(i.kind.clone())
        .data(i.data.clone())
}

async fn events(State(app): State<Shared>, headers: HeaderMap) -> impl IntoResponse {
    let seen = Seen::from_header(headers.get("last-event-id").map(|v| v.as_bytes()));
    let s = app.hub.subscribe(seen);
    let feed = Feed {
        app: app.clone(),
        queue: s.missed.into(),
        live: s.live,
        last: s.after,
        gap: s.gap,
        draining: false,
    };
    let st: std::pin::Pin<Box<dyn Stream<Item = Result<SseEvent, Infallible>> + Send>> =
        Box::pin(stream::unfold(feed, next_event));
    Sse::new(st).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

async fn next_event(mut f: Feed) -> Option<(Result<SseEvent, Infallible>, Feed)> {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        if std::mem::take(&mut f.gap) {
            // Told once: some of what it missed is no longer kept (reload the sessions).
            let e = SseEvent::default()
                .event("gap")
                .data(json!({"after": f.last}).to_string());
            return Some((Ok(e), f));
        }
        if let Some(i) = f.queue.pop_front() {
            if i.id <= f.last {
                continue;
            }
            f.last = i.id;
            return Some((Ok(sse(&i)), f));
        }
        if f.draining {
            return None;
        }
        let got = tokio::select! {
            got = f.live.recv() => got,
            () = f.app.shutdown.cancelled() => {
                // Drain: what the hub holds past this stream's last event (the session's
                // ending), then the end of the stream.
                let (missed, _) = f.app.hub.since(f.last);
                f.queue.extend(missed);
                f.draining = true;
                continue;
            }
        };
        match got {
            Ok(i) => f.queue.push_back(i),
            // Fell behind the live feed: catch up from what the hub keeps.
            Err(RecvError::Lagged(_)) => {
                let (missed, gap) = f.app.hub.since(f.last);
                f.queue.extend(missed);
                f.gap = gap;
            }
            Err(RecvError::Closed) => return None,
        }
    }
}
