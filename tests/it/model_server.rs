//! An in-process stand-in for a realtime model's server: a real WebSocket listener on loopback that a test scripts frame by frame (send, expect, close, drop), recording the upgrade's path and headers, and appending every frame the client sends to `$VOXDESK_FRAME_DUMP` for the SDK check.

use std::io::Write;
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

/// What the script sends.
enum Out {
    Text(String),
    Binary(Vec<u8>),
    Close(u16, String),
    /// Drop the TCP connection with no close frame.
    Drop,
}

/// One accepted connection, as the script sees it.
pub struct Conn {
    pub n: usize,
    /// The upgrade request's path and query.
    pub path: String,
    pub headers: Vec<(String, String)>,
    frames: std_mpsc::Receiver<Value>,
    out: mpsc::UnboundedSender<Out>,
    /// Every frame received on this connection, for failure messages.
    pub seen: Vec<Value>,
}

impl Conn {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The next frame the client sends, if one comes in time.
    pub fn recv(&mut self, within: Duration) -> Option<Value> {
        let v = self.frames.recv_timeout(within).ok()?;
        self.seen.push(v.clone());
        Some(v)
    }

    /// Skip frames (audio, mostly) until one satisfies `ok`; panics with what was seen if none
    /// comes in time.
    pub fn expect(&mut self, what: &str, within: Duration, ok: impl Fn(&Value) -> bool) -> Value {
        let until = Instant::now() + within;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match self.recv(left) {
                Some(v) if ok(&v) => return v,
                Some(_) => {}
                None => break,
            }
        }
        let last: Vec<String> = self
            .seen
            .iter()
            .rev()
            .take(8)
            .map(|v| {
                let s = v.to_string();
                s.chars().take(300).collect()
            })
            .collect();
        panic!(
            "connection {}: no {what} within {within:?}; last frames: {last:#?}",
            self.n
        )
    }

    /// Frames that arrive within `within`, none of which satisfies `bad`.
    pub fn none_within(&mut self, what: &str, within: Duration, bad: impl Fn(&Value) -> bool) {
        let until = Instant::now() + within;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            if let Some(v) = self.recv(left) {
                assert!(!bad(&v), "connection {}: unexpected {what}: {v}", self.n);
            }
        }
    }

    pub fn send(&self, v: Value) {
        let _ = self.out.send(Out::Text(v.to_string()));
    }
    /// JSON in a Binary frame (Gemini's server sends those too).
    pub fn send_binary(&self, v: Value) {
        let _ = self.out.send(Out::Binary(v.to_string().into_bytes()));
    }
    pub fn send_raw(&self, text: &str) {
        let _ = self.out.send(Out::Text(text.to_string()));
    }
    pub fn close(&self, code: u16, reason: &str) {
        let _ = self.out.send(Out::Close(code, reason.into()));
    }
    /// Drop the socket with no close frame (a network cut).
    pub fn cut(&self) {
        let _ = self.out.send(Out::Drop);
    }
}

/// A listener on 127.0.0.1 whose connections are handed to the test, one at a time.
pub struct Server {
    pub port: u16,
    conns: std_mpsc::Receiver<Conn>,
    _rt: tokio::runtime::Runtime,
}

impl Server {
    /// `provider` tags the dumped frames ("gemini" or "openai").
    pub fn start(provider: &'static str) -> Server {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let (conn_tx, conns) = std_mpsc::channel();
        let dump = std::env::var_os("VOXDESK_FRAME_DUMP").map(std::path::PathBuf::from);
        rt.spawn(async move {
            let mut n = 0;
            while let Ok((tcp, _)) = listener.accept().await {
                n += 1;
                let conn_tx = conn_tx.clone();
                let dump = dump.clone();
                tokio::spawn(serve(tcp, n, provider, conn_tx, dump));
            }
        });
        Server {
            port,
            conns,
            _rt: rt,
        }
    }

    pub fn base(&self) -> String {
        format!("ws://127.0.0.1:{}", self.port)
    }

    /// The next connection the client makes.
    pub fn accept(&self, within: Duration) -> Conn {
        self.conns
            .recv_timeout(within)
            .unwrap_or_else(|_| panic!("the client did not connect within {within:?}"))
    }

    /// Whether another connection comes within `within`.
    pub fn try_accept(&self, within: Duration) -> Option<Conn> {
        self.conns.recv_timeout(within).ok()
    }
}

// The handshake callback's error type is tungstenite's own (an HTTP response), not ours.
#[allow(clippy::result_large_err)]
async fn serve(
    tcp: tokio::net::TcpStream,
    n: usize,
    provider: &'static str,
    conn_tx: std_mpsc::Sender<Conn>,
    dump: Option<std::path::PathBuf>,
) {
    // The upgrade request's path and headers, as the handshake callback saw them.
    type Upgrade = (String, Vec<(String, String)>);
    let seen: Arc<Mutex<Upgrade>> = Arc::default();
    let s2 = seen.clone();
    let callback = move |req: &Request, resp: Response| {
        let mut g = s2.lock().unwrap();
        g.0 = req
            .uri()
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default();
        g.1 = req
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        Ok(resp)
    };
    let Ok(ws) = tokio_tungstenite::accept_hdr_async(tcp, callback).await else {
        return;
    };
    let (mut sink, mut stream) = ws.split();
    let (frame_tx, frames) = std_mpsc::channel();
    let (out, mut out_rx) = mpsc::unbounded_channel();
    let (path, headers) = seen.lock().unwrap().clone();
    let _ = conn_tx.send(Conn {
        n,
        path,
        headers,
        frames,
        out,
        seen: Vec::new(),
    });
    loop {
        tokio::select! {
            m = stream.next() => match m {
                Some(Ok(Message::Text(t))) => record(&frame_tx, provider, t.as_bytes(), &dump),
                Some(Ok(Message::Binary(b))) => record(&frame_tx, provider, &b, &dump),
                Some(Ok(_)) => {}
                _ => return,
            },
            o = out_rx.recv() => match o {
                Some(Out::Text(t)) => { let _ = sink.send(Message::text(t)).await; }
                Some(Out::Binary(b)) => { let _ = sink.send(Message::binary(b)).await; }
                Some(Out::Close(code, reason)) => {
                    let _ = sink
                        .send(Message::Close(Some(CloseFrame {
                            code: CloseCode::from(code),
                            reason: reason.into(),
                        })))
                        .await;
                    return;
                }
                Some(Out::Drop) | None => return,
            },
        }
    }
}

fn record(
    tx: &std_mpsc::Sender<Value>,
    provider: &str,
    bytes: &[u8],
    dump: &Option<std::path::PathBuf>,
) {
    let v: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => panic!("the client sent a frame that is not JSON ({e})"),
    };
    if let Some(path) = dump {
        let line = serde_json::json!({"provider": provider, "frame": v}).to_string() + "\n";
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
    let _ = tx.send(v);
}

/// The observation in the client's first turn (`Task: …` then the screen as JSON between the
/// untrusted-text markers).
pub fn first_observation(turn_text: &str) -> Value {
    let start = turn_text
        .find("<untrusted-screen-text>")
        .expect("the first turn quotes the screen")
        + "<untrusted-screen-text>".len();
    let end = turn_text.find("</untrusted-screen-text>").unwrap();
    serde_json::from_str(turn_text[start..end].trim()).expect("the screen is JSON")
}

/// The id of the target whose text is exactly `text`.
pub fn target(obs: &Value, text: &str) -> u64 {
    obs["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["text"] == text)
        .and_then(|t| t["id"].as_u64())
        .unwrap_or_else(|| panic!("no target {text:?} in {obs}"))
}

/// PCM16 as base64 (a quiet tone), `ms` long at `rate`.
pub fn tone_b64(ms: u32, rate: u32) -> String {
    use base64::Engine;
    let n = (rate as u64 * ms as u64 / 1000) as usize;
    let mut bytes = Vec::with_capacity(n * 2);
    for i in 0..n {
        let s = ((i as f32 * 440.0 * std::f32::consts::TAU / rate as f32).sin() * 3000.0) as i16;
        bytes.extend_from_slice(&s.to_le_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
