//! A loopback WebSocket server standing in for a provider in `voxdesk bench voice`: each connection handed over with its frames' arrival instants.

use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// A loopback server standing in for a provider in `voxdesk bench voice`: each connection is
/// handed over as a [`Peer`] whose frames carry the instant they arrived.
pub struct Loopback {
    pub port: u16,
    pub peers: std::sync::mpsc::Receiver<Peer>,
    _thread: std::thread::JoinHandle<()>,
}

/// One connection to the loopback server.
pub struct Peer {
    /// Frames from the client, with when they arrived.
    pub frames: std::sync::mpsc::Receiver<(std::time::Instant, Vec<u8>)>,
    /// Text frames to the client; `None` drops the connection (no close frame).
    pub out: mpsc::UnboundedSender<Option<String>>,
}

impl Loopback {
    pub fn start() -> std::io::Result<Loopback> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let port = std_listener.local_addr()?.port();
        let (tx, peers) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("voxdesk-loopback".into())
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build()
                else {
                    return;
                };
                rt.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(std_listener) else {
                        return;
                    };
                    while let Ok((tcp, _)) = listener.accept().await {
                        let tx = tx.clone();
                        tokio::spawn(async move {
                            let Ok(ws) = tokio_tungstenite::accept_async(tcp).await else {
                                return;
                            };
                            let (mut sink, mut stream) = ws.split();
                            let (ftx, frames) = std::sync::mpsc::channel();
                            let (out, mut orx) = mpsc::unbounded_channel();
                            if tx.send(Peer { frames, out }).is_err() {
                                return;
                            }
                            loop {
                                tokio::select! {
                                    m = stream.next() => match m {
                                        Some(Ok(Message::Text(t))) => {
                                            let _ = ftx.send((std::time::Instant::now(), t.as_bytes().to_vec()));
                                        }
                                        Some(Ok(Message::Binary(b))) => {
                                            let _ = ftx.send((std::time::Instant::now(), b.to_vec()));
                                        }
                                        Some(Ok(_)) => {}
                                        _ => return,
                                    },
                                    o = orx.recv() => match o {
                                        Some(Some(t)) => { let _ = sink.send(Message::text(t)).await; }
                                        _ => return,
                                    },
                                }
                            }
                        });
                    }
                });
            })?;
        Ok(Loopback {
            port,
            peers,
            _thread: thread,
        })
    }
}
