//! The realtime socket: one WebSocket connection owned by a reader task and a writer task, JSON frames out and in (Text or Binary) through bounded queues, the key in a header and never in the URL or a log.

use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;

/// What the reader hands on.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A data frame's bytes (servers send JSON in Text and Binary frames alike).
    Frame(Vec<u8>),
    /// The socket ended: the server's close code and reason, or none when it just dropped.
    Closed { code: Option<u16>, reason: String },
}

/// Why a connection failed.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("connecting to {url}: {message}")]
    Connect { url: String, message: String },
    #[error("the header {0} cannot hold that value")]
    Header(&'static str),
}

/// A connected socket: frames to send go in `out`, frames received come out of `incoming`.
/// Dropping it closes the connection.
pub struct Socket {
    pub out: mpsc::Sender<String>,
    pub incoming: mpsc::Receiver<Incoming>,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Socket {
    /// Leave the connection: frames already queued (a cancel sent as the task stops) are written
    /// and the close handshake started, waiting at most `within`; then both halves stop.
    pub async fn close(mut self, within: std::time::Duration) {
        let (closed, _) = mpsc::channel(1);
        drop(std::mem::replace(&mut self.out, closed));
        let _ = tokio::time::timeout(within, &mut self.writer).await;
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.reader.abort();
        self.writer.abort();
    }
}

/// Connect to `url`, sending `header` (the API key's) with the upgrade request. `queue` bounds
/// both directions: a slow network holds the sender back instead of growing memory.
pub async fn connect(
    url: &str,
    header: (&'static str, String),
    queue: usize,
) -> Result<Socket, TransportError> {
    let connect_err = |message: String| TransportError::Connect {
        url: url.to_string(),
        message,
    };
    let mut req = url
        .into_client_request()
        .map_err(|e| connect_err(e.to_string()))?;
    let value = HeaderValue::from_str(&header.1).map_err(|_| TransportError::Header(header.0))?;
    req.headers_mut().insert(header.0, value);
    let (ws, _) = tokio_tungstenite::connect_async(req)
        .await
        .map_err(|e| connect_err(e.to_string()))?;
    let (mut sink, mut stream) = ws.split();
    let (out_tx, mut out_rx) = mpsc::channel::<String>(queue.max(1));
    let (in_tx, in_rx) = mpsc::channel::<Incoming>(queue.max(1));
    let writer = tokio::spawn(async move {
        while let Some(frame) = out_rx.recv().await {
            if sink.send(Message::text(frame)).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let reader = tokio::spawn(async move {
        let end = loop {
            match stream.next().await {
                Some(Ok(Message::Text(t))) => {
                    if in_tx
                        .send(Incoming::Frame(t.as_bytes().to_vec()))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                Some(Ok(Message::Binary(b))) => {
                    if in_tx.send(Incoming::Frame(b.to_vec())).await.is_err() {
                        return;
                    }
                }
                Some(Ok(Message::Close(c))) => {
                    break Incoming::Closed {
                        code: c.as_ref().map(|f| u16::from(f.code)),
                        reason: c.map(|f| f.reason.to_string()).unwrap_or_default(),
                    };
                }
                // Pings are answered by tungstenite itself; pongs and raw frames carry nothing.
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    break Incoming::Closed {
                        code: None,
                        reason: e.to_string(),
                    }
                }
                None => {
                    break Incoming::Closed {
                        code: None,
                        reason: "the connection dropped".into(),
                    }
                }
            }
        };
        let _ = in_tx.send(end).await;
    });
    Ok(Socket {
        out: out_tx,
        incoming: in_rx,
        reader,
        writer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tokio::net::TcpListener;
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

    /// A loopback server: records the upgrade request's path and key header, answers the first
    /// frame with a Binary `setupComplete`, then a Text one, then closes with 1000. (The
    /// handshake callback's error type is tungstenite's, large by its design.)
    #[allow(clippy::result_large_err)]
    async fn server() -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let log2 = log.clone();
            let ws =
                tokio_tungstenite::accept_hdr_async(tcp, move |req: &Request, resp: Response| {
                    let key = req
                        .headers()
                        .get("x-goog-api-key")
                        .map(|v| v.to_str().unwrap().to_string())
                        .unwrap_or_default();
                    log2.lock()
                        .unwrap()
                        .push(format!("{} key={key}", req.uri()));
                    Ok(resp)
                })
                .await
                .unwrap();
            let (mut sink, mut stream) = ws.split();
            if let Some(Ok(Message::Text(t))) = stream.next().await {
                log.lock().unwrap().push(t.to_string());
            }
            sink.send(Message::binary(b"{\"setupComplete\":{}}".to_vec()))
                .await
                .unwrap();
            sink.send(Message::text("{\"serverContent\":{\"turnComplete\":true}}"))
                .await
                .unwrap();
            sink.send(Message::Close(Some(
                tokio_tungstenite::tungstenite::protocol::CloseFrame {
                    code: 1000.into(),
                    reason: "bye".into(),
                },
            )))
            .await
            .unwrap();
        });
        (format!("ws://{addr}"), seen)
    }

    #[tokio::test]
    async fn frames_go_out_and_come_in_text_or_binary_and_the_close_is_told() {
        let (base, seen) = server().await;
        let path = super::super::gemini::path("v1beta");
        let mut s = connect(
            &format!("{base}{path}"),
            ("x-goog-api-key", "k-1".into()),
            8,
        )
        .await
        .unwrap();
        s.out.send("{\"setup\":{}}".into()).await.unwrap();
        let mut got = Vec::new();
        while let Some(m) = s.incoming.recv().await {
            let end = matches!(m, Incoming::Closed { .. });
            got.push(m);
            if end {
                break;
            }
        }
        assert_eq!(
            got,
            vec![
                Incoming::Frame(b"{\"setupComplete\":{}}".to_vec()),
                Incoming::Frame(b"{\"serverContent\":{\"turnComplete\":true}}".to_vec()),
                Incoming::Closed {
                    code: Some(1000),
                    reason: "bye".into()
                },
            ]
        );
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen[0],
            format!("{path} key=k-1"),
            "the key rides in a header"
        );
        assert_eq!(seen[1], "{\"setup\":{}}");
    }

    #[tokio::test]
    async fn a_refused_connection_is_an_error_naming_the_url() {
        // A port nothing listens on: bind one, then let it go.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("ws://{}", l.local_addr().unwrap());
        drop(l);
        let e = connect(&url, ("x-goog-api-key", "k".into()), 1)
            .await
            .err()
            .expect("nothing listens there");
        assert!(
            e.to_string().starts_with(&format!("connecting to {url}")),
            "{e}"
        );
        assert!(!e.to_string().contains("k\""));
    }

    #[tokio::test]
    async fn frames_queued_before_a_close_reach_the_server_then_the_close() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
            let mut got = Vec::new();
            while let Some(Ok(m)) = ws.next().await {
                match m {
                    Message::Text(t) => got.push(t.to_string()),
                    Message::Close(_) => {
                        got.push("close".into());
                        break;
                    }
                    _ => {}
                }
            }
            got
        });
        let s = connect(&format!("ws://{addr}"), ("x-goog-api-key", "k".into()), 64)
            .await
            .unwrap();
        for i in 0..40 {
            s.out.send(format!("{{\"n\":{i}}}")).await.unwrap();
        }
        s.out
            .send("{\"type\":\"response.cancel\"}".into())
            .await
            .unwrap();
        s.close(std::time::Duration::from_secs(5)).await;
        let got = server.await.unwrap();
        assert_eq!(got.len(), 42, "{got:?}");
        assert_eq!(got[40], "{\"type\":\"response.cancel\"}");
        assert_eq!(got[41], "close");
    }
}
