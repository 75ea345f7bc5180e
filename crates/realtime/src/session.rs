//! The realtime session's network side: one thread with a tokio runtime that owns the connection (connect, open, wait until ready, reconnect with backoff, resume after `goAway`, replay into a new session), routes the model's audio to the speaker behind the interruption fence, hands tool calls to the desk one at a time, and halts at a spoken stop or the emergency stop.

use std::sync::{mpsc as std_mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;

use super::transport::{self, Incoming};
use super::turns::{go_away_within, Calls, Fence, Pending, Played};
use super::wire::{Up, Wire};
use voxdesk_input::stop::{Cause, StopLatch};

/// The speaker, as the session drives it: the model's PCM in, flushed at an interruption, and
/// how many of the samples given to it have been played (for truncating at what was heard).
pub trait Playback: Send {
    fn play(&mut self, rate: u32, pcm: &[i16]);
    fn flush(&mut self);
    /// Samples played since the last call.
    fn take_played(&mut self) -> u64;
}

/// No speaker (quiet runs): the model's speech "plays" in real time into nothing, so what is
/// counted as heard when the person speaks over it is what a speaker would have played.
pub struct Silent {
    rate: u32,
    /// Queued and not yet played.
    pending: u64,
    /// Played and not yet reported.
    done: u64,
    last: Instant,
}
impl Silent {
    pub fn new() -> Silent {
        Silent {
            rate: 24_000,
            pending: 0,
            done: 0,
            last: Instant::now(),
        }
    }
    fn advance(&mut self) {
        let now = Instant::now();
        let can = (now.duration_since(self.last).as_secs_f64() * f64::from(self.rate)) as u64;
        let p = can.min(self.pending);
        self.pending -= p;
        self.done += p;
        self.last = now;
    }
}
impl Default for Silent {
    fn default() -> Self {
        Silent::new()
    }
}
impl Playback for Silent {
    fn play(&mut self, rate: u32, pcm: &[i16]) {
        self.advance();
        self.rate = rate.max(1);
        self.pending += pcm.len() as u64;
    }
    fn flush(&mut self) {
        self.advance();
        self.pending = 0;
    }
    fn take_played(&mut self) -> u64 {
        self.advance();
        std::mem::take(&mut self.done)
    }
}

impl Playback for voxdesk_voice::narrate::Speaker {
    fn play(&mut self, rate: u32, pcm: &[i16]) {
        voxdesk_voice::narrate::Speaker::play(self, rate, pcm)
    }
    fn flush(&mut self) {
        voxdesk_voice::narrate::Speaker::flush(self)
    }
    fn take_played(&mut self) -> u64 {
        voxdesk_voice::narrate::Speaker::take_played(self)
    }
}

/// How to reach the model.
pub struct Options {
    pub url: String,
    /// The key's header (never logged).
    pub header: (&'static str, String),
    /// Words that halt pending actions when the person says them.
    pub stop_words: Vec<String>,
    /// First retry after this; doubled up to `backoff_max`.
    pub backoff: Duration,
    pub backoff_max: Duration,
    /// An outage this long ends the session.
    pub give_up_after: Duration,
    /// The opening must be accepted within this.
    pub ready_within: Duration,
}

impl Options {
    pub fn new(url: String, header: (&'static str, String)) -> Options {
        Options {
            url,
            header,
            stop_words: vec!["stop".into(), "cancel".into()],
            backoff: Duration::from_millis(250),
            backoff_max: Duration::from_secs(8),
            give_up_after: Duration::from_secs(60),
            ready_within: Duration::from_secs(10),
        }
    }
}

/// What the network side tells the driver.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// Connected and accepted; `again`: after a drop or a `goAway`.
    Connected { again: bool, resumed: bool },
    /// The model cannot be reached (said aloud); nothing is dispatched meanwhile.
    Unreachable(String),
    /// The outage lasted too long: the session is over.
    GaveUp(String),
    /// A tool call for the desk (one at a time: the next comes after this one's answer).
    Call(Pending),
    /// What the person said (one utterance).
    Heard(String),
    /// What the model said (one turn).
    Said(String),
    /// A stop word was heard: the latch is set, the model's response cancelled.
    StopWord(String),
}

/// What the driver sends the network side.
pub enum Down {
    /// The desk's answer; `picture`: the observation's (id, JPEG) when pictures are allowed.
    Answer {
        call: Pending,
        result: Value,
        picture: Option<(String, Vec<u8>)>,
    },
    Turn {
        text: String,
        jpeg: Option<Vec<u8>>,
    },
    Audio(Vec<i16>),
    /// A new task's stop latch (`voxdesk listen`: one per task).
    Latch(Arc<StopLatch>),
    /// Close the session (other senders, the microphone's, may still be alive).
    Close,
    /// The local listener heard the person speak over the model.
    Interrupted,
}

/// Counters, for the bench and the log.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub connections: u32,
    pub resumed: u32,
    pub frames_in: u64,
    pub frames_bad: u64,
    pub audio_dropped: u64,
}

/// The driver's end of a running session. Dropping it closes the connection.
pub struct Session {
    down: Option<mpsc::Sender<Down>>,
    pub notes: std_mpsc::Receiver<Note>,
    thread: Option<std::thread::JoinHandle<Stats>>,
}

impl Session {
    /// Start the network thread.
    pub fn start(
        wire: Box<dyn Wire>,
        opts: Options,
        latch: Arc<StopLatch>,
        speaker: Box<dyn Playback>,
    ) -> std::io::Result<Session> {
        let (down_tx, down_rx) = mpsc::channel(256);
        let (note_tx, notes) = std_mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("voxdesk-realtime".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = note_tx.send(Note::GaveUp(format!("no async runtime: {e}")));
                        return Stats::default();
                    }
                };
                let net = Net {
                    wire,
                    opts,
                    latch,
                    speaker,
                    notes: note_tx,
                    down: down_rx,
                    state: State::default(),
                };
                rt.block_on(net.run())
            })?;
        Ok(Session {
            down: Some(down_tx),
            notes,
            thread: Some(thread),
        })
    }

    /// Send to the network side (false once it has ended).
    pub fn send(&self, d: Down) -> bool {
        self.down
            .as_ref()
            .is_some_and(|t| t.blocking_send(d).is_ok())
    }

    /// A sender the microphone thread can use (frames beyond the queue are dropped, counted).
    pub fn audio_in(&self) -> Option<mpsc::Sender<Down>> {
        self.down.clone()
    }

    /// Close the connection and wait for the network thread.
    pub fn close(mut self) -> Stats {
        self.shut()
    }

    fn shut(&mut self) -> Stats {
        if let Some(d) = self.down.take() {
            let _ = d.blocking_send(Down::Close);
        }
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shut();
    }
}

/// What survives a reconnect.
#[derive(Default)]
struct State {
    stats: Stats,
    /// The last resumable handle (Gemini).
    handle: Option<String>,
    calls: Calls,
    /// The connection each received call came on (an answer for an older one cannot be sent).
    call_conn: std::collections::HashMap<String, u32>,
    /// User turns sent so far (the task), for a new session after a drop.
    turns: Vec<String>,
    /// What the desk did, one line per answered call, for the replay.
    done: Vec<String>,
    /// Answers that could not reach the model (their connection ended): told on the next one.
    untold: Vec<String>,
    heard: String,
    said: String,
    /// The turn speaking was interrupted: its words still to come were never heard.
    mute_said: bool,
    stop_handled: bool,
    /// Running calls the model cancelled (new speech cancels a BLOCKING call): the desk cannot
    /// undo them, so their results are told with the next message, never as their answers.
    cancelled_running: std::collections::HashSet<String>,
}

enum Leave {
    /// The driver closed the session.
    Closed,
    /// The connection ended: connect again (an outage until it is back).
    Again,
    /// The server asked for a renewal (`goAway`): connect again, no outage to tell anyone.
    Renew,
}

struct Net {
    wire: Box<dyn Wire>,
    opts: Options,
    latch: Arc<StopLatch>,
    speaker: Box<dyn Playback>,
    notes: std_mpsc::Sender<Note>,
    down: mpsc::Receiver<Down>,
    state: State,
}

impl Net {
    async fn run(mut self) -> Stats {
        let mut conn: u32 = 0;
        let mut outage: Option<Instant> = None;
        let mut delay = self.opts.backoff;
        loop {
            // During an outage no attempt outlasts what is left of `give_up_after`.
            let within = match outage {
                Some(since) => self
                    .opts
                    .give_up_after
                    .saturating_sub(since.elapsed())
                    .min(self.opts.ready_within),
                None => self.opts.ready_within,
            };
            let tried = Instant::now();
            let attempt = match tokio::time::timeout(within, self.connect()).await {
                Ok(a) => a,
                Err(_) => Err("the server did not accept the session in time".to_string()),
            };
            let mut socket = match attempt {
                Ok(s) => s,
                Err(why) => {
                    let since = *outage.get_or_insert_with(|| {
                        let _ = self.notes.send(Note::Unreachable(why.clone()));
                        // The outage began when this attempt did.
                        tried
                    });
                    let left = self.opts.give_up_after.saturating_sub(since.elapsed());
                    tracing::warn!("realtime: {why}; retrying in {:?}", delay.min(left));
                    if left.is_zero() {
                        // Said aloud and recorded without the URL and the socket error (those
                        // are in the log, above).
                        let _ = self.notes.send(Note::GaveUp(format!(
                            "the model was unreachable for {} s",
                            since.elapsed().as_secs()
                        )));
                        return self.state.stats;
                    }
                    if self.wait_or_close(delay.min(left)).await {
                        return self.state.stats;
                    }
                    delay = (delay * 2).min(self.opts.backoff_max);
                    continue;
                }
            };
            conn += 1;
            delay = self.opts.backoff;
            // Back: a later outage is measured from its own start.
            outage = None;
            self.state.stats.connections += 1;
            let again = conn > 1;
            let resumed = again && self.wire.resumes() && self.state.handle.is_some();
            if resumed {
                self.state.stats.resumed += 1;
            }
            // Calls not dispatched belong to the old connection: the model asks again if it
            // still wants them. A running one finishes, and its answer is told, not sent.
            self.state.calls.cancel_all();
            let _ = self.notes.send(Note::Connected { again, resumed });
            if again {
                self.catch_up(&mut socket, resumed).await;
            }
            match self.serve(&mut socket, conn).await {
                Leave::Closed => {
                    // What was queued last (the cancel of a stopped task) still reaches the model.
                    socket.close(Duration::from_secs(1)).await;
                    return self.state.stats;
                }
                Leave::Again => {
                    let _ = self.notes.send(Note::Unreachable(
                        "the connection to the model ended; reconnecting".into(),
                    ));
                    outage = Some(Instant::now());
                }
                // A planned renewal is silent; only a renewal that then fails is an outage.
                Leave::Renew => tracing::info!("realtime: renewing the connection (goAway)"),
            }
        }
    }

    /// Connect, open, and wait until the server accepts.
    async fn connect(&mut self) -> Result<transport::Socket, String> {
        let mut s = transport::connect(&self.opts.url, self.opts.header.clone(), 256)
            .await
            .map_err(|e| e.to_string())?;
        let resume = if self.wire.resumes() {
            self.state.handle.clone()
        } else {
            None
        };
        for f in self.wire.open(resume.as_deref()) {
            s.out
                .send(f)
                .await
                .map_err(|_| "the socket closed".to_string())?;
        }
        let deadline = tokio::time::Instant::now() + self.opts.ready_within;
        loop {
            let got = tokio::time::timeout_at(deadline, s.incoming.recv())
                .await
                .map_err(|_| "the server did not accept the session in time".to_string())?;
            match got {
                Some(Incoming::Frame(b)) => match self.wire.decode(&b) {
                    Ok(ups) if ups.contains(&Up::Ready) => return Ok(s),
                    Ok(ups) => {
                        for u in ups {
                            if let Up::Problem(p) = u {
                                return Err(format!("the server refused the session: {p}"));
                            }
                        }
                    }
                    Err(e) => tracing::warn!("realtime: unreadable frame while opening: {e}"),
                },
                Some(Incoming::Closed { code, reason }) => {
                    return Err(format!(
                        "the server closed the connection ({}{})",
                        code.map(|c| c.to_string())
                            .unwrap_or_else(|| "no code".into()),
                        if reason.is_empty() {
                            String::new()
                        } else {
                            format!(": {reason}")
                        }
                    ))
                }
                None => return Err("the socket closed".into()),
            }
        }
    }

    /// Sleep `d`, or return true at once if the driver closed the session.
    async fn wait_or_close(&mut self, d: Duration) -> bool {
        let sleep = tokio::time::sleep(d);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                _ = &mut sleep => return false,
                m = self.down.recv() => match m {
                    None | Some(Down::Close) => return true,
                    Some(Down::Answer { call, result, .. }) => self.untold(&call, &result),
                    Some(Down::Latch(l)) => self.new_latch(l),
                    Some(Down::Turn { text, .. }) => self.state.turns.push(text),
                    Some(Down::Audio(_)) => self.state.stats.audio_dropped += 1,
                    Some(Down::Interrupted) => {}
                },
            }
        }
    }

    /// After a reconnect: tell what the model missed. Resumed (Gemini): only answers that could
    /// not be sent. A new session (OpenAI, or no handle): the task and everything done so far.
    async fn catch_up(&mut self, s: &mut transport::Socket, resumed: bool) {
        let untold = std::mem::take(&mut self.state.untold);
        let text = if resumed {
            if untold.is_empty() {
                return;
            }
            finished_meanwhile(&untold)
        } else {
            if self.state.turns.is_empty() && untold.is_empty() {
                return;
            }
            let mut t = String::from(
                "The connection to voxdesk dropped and this is a new session. Continue the same \
                 task; do not redo what is done. Observe first: the screen may have changed.\n",
            );
            for turn in &self.state.turns {
                t.push_str(&format!("Earlier: {turn}\n"));
            }
            for (i, d) in self.state.done.iter().enumerate() {
                t.push_str(&format!("Done {}: {d}\n", i + 1));
            }
            if self.state.calls.busy() {
                t.push_str(
                    "Still running when the connection dropped: a desk call; its result follows \
                     as soon as it finishes. Wait for it; do not call it again.\n",
                );
            }
            t
        };
        for f in self.wire.user_turn(&text, None) {
            let _ = s.out.send(f).await;
        }
    }

    /// Serve one connection until it ends or the driver closes the session.
    async fn serve(&mut self, s: &mut transport::Socket, conn: u32) -> Leave {
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut fence = Fence::default();
        let mut played = Played::new(24_000);
        let mut turn_active = false;
        // The response whose audio came last (OpenAI; empty for Gemini).
        let mut last_turn = String::new();
        // After `goAway`: leave once no call is running, or at this instant.
        let mut leave_by: Option<tokio::time::Instant> = None;
        loop {
            if let Some(by) = leave_by {
                if !self.state.calls.busy() || tokio::time::Instant::now() >= by {
                    return Leave::Renew;
                }
            }
            tokio::select! {
                got = s.incoming.recv() => {
                    let b = match got {
                        Some(Incoming::Frame(b)) => b,
                        Some(Incoming::Closed { code, reason }) => {
                            tracing::warn!("realtime: closed by the server ({code:?} {reason})");
                            self.speaker.flush();
                            return Leave::Again;
                        }
                        None => return Leave::Again,
                    };
                    self.state.stats.frames_in += 1;
                    let ups = match self.wire.decode(&b) {
                        Ok(u) => u,
                        Err(e) => {
                            self.state.stats.frames_bad += 1;
                            tracing::warn!("realtime: ignored an unreadable frame: {e}");
                            continue;
                        }
                    };
                    for u in ups {
                        match u {
                            Up::Ready => {}
                            Up::Audio { turn, item, rate, pcm } => {
                                let plays = if turn.is_empty() {
                                    fence.gemini_plays()
                                } else {
                                    fence.openai_plays(&turn)
                                };
                                turn_active = true;
                                last_turn.clone_from(&turn);
                                if plays && !self.latch.is_stopped() {
                                    played.received(&item, pcm.len() as u64);
                                    self.speaker.play(rate, &pcm);
                                }
                                self.flush_heard();
                            }
                            Up::Said(t) => {
                                turn_active = true;
                                if !self.state.mute_said {
                                    self.state.said.push_str(&t);
                                }
                            }
                            Up::Heard(t) => {
                                self.state.heard.push_str(&t);
                                self.check_stop_words(s).await;
                            }
                            Up::Interrupted => {
                                self.interrupt(s, &mut played, &mut fence, turn_active, &last_turn).await;
                            }
                            Up::TurnDone => {
                                fence.turn_complete();
                                turn_active = false;
                                self.state.mute_said = false;
                                self.flush_heard();
                                let said = std::mem::take(&mut self.state.said);
                                if !said.trim().is_empty() {
                                    let _ = self.notes.send(Note::Said(said.trim().to_string()));
                                }
                            }
                            Up::Call(p) => {
                                self.flush_heard();
                                let id = p.id.clone();
                                if let Err(e) = self.state.calls.receive(p) {
                                    tracing::warn!("realtime: call not taken: {e}");
                                    continue;
                                }
                                self.state.call_conn.insert(id, conn);
                                self.dispatch();
                            }
                            Up::Cancelled(ids) => {
                                let dropped = self.state.calls.cancel(&ids);
                                self.state.cancelled_running.extend(
                                    ids.iter().filter(|id| !dropped.contains(id)).cloned(),
                                );
                                tracing::info!("realtime: the model cancelled {ids:?} ({} not yet run)", dropped.len());
                            }
                            Up::GoAway(left) => {
                                leave_by = Some(leave_by_after_go_away(tokio::time::Instant::now(), left));
                                tracing::info!("realtime: goAway, {left:?} left; renewing the connection");
                            }
                            Up::Handle(h) => {
                                if h.is_some() {
                                    self.state.handle = h;
                                }
                            }
                            Up::Send(f) => {
                                let _ = s.out.send(f).await;
                            }
                            Up::Problem(p) => tracing::warn!("realtime: the server says: {p}"),
                            Up::Ignored(what) => tracing::debug!("realtime: ignored {what}"),
                        }
                    }
                }
                m = self.down.recv() => {
                    let Some(m) = m else { return Leave::Closed };
                    match m {
                        Down::Close => {
                            // A stop that ends the task may close the session before the
                            // next tick: the model's response is still cancelled.
                            if self.latch.is_stopped() && !self.state.stop_handled {
                                self.halt(s).await;
                            }
                            return Leave::Closed;
                        }
                        Down::Audio(pcm) => {
                            let f = self.wire.audio(&pcm);
                            if s.out.try_send(f).is_err() {
                                self.state.stats.audio_dropped += 1;
                            }
                        }
                        Down::Turn { text, jpeg } => {
                            self.state.turns.push(text.clone());
                            for f in self.wire.user_turn(&text, jpeg.as_deref()) {
                                let _ = s.out.send(f).await;
                            }
                        }
                        Down::Answer { call, result, picture } => {
                            let _ = self.state.calls.answered(&call.id);
                            self.state.done.push(summary(&call, &result));
                            let cancelled = self.state.cancelled_running.remove(&call.id);
                            let here = self.state.call_conn.remove(&call.id) == Some(conn) && !cancelled;
                            if here {
                                let mut result = result;
                                let untold = std::mem::take(&mut self.state.untold);
                                if !untold.is_empty() {
                                    result["earlier"] = Value::from(untold.join("; "));
                                }
                                let frames = picture
                                    .map(|(id, jpeg)| self.wire.picture(&id, &jpeg))
                                    .unwrap_or_default()
                                    .into_iter()
                                    .chain(self.wire.answer(&call, &result));
                                for f in frames.collect::<Vec<_>>() {
                                    let _ = s.out.send(f).await;
                                }
                            } else if cancelled {
                                // The model cancelled it on this connection: told with the
                                // next message, as the model goes on talking.
                                self.state.untold.push(summary(&call, &result));
                            } else {
                                // Its connection ended while it ran: the model is back and
                                // waits for it, so it is told now, before anything else.
                                self.state.untold.push(summary(&call, &result));
                                let text = finished_meanwhile(&std::mem::take(&mut self.state.untold));
                                for f in self.wire.user_turn(&text, None) {
                                    let _ = s.out.send(f).await;
                                }
                            }
                            self.dispatch();
                        }
                        Down::Latch(l) => self.new_latch(l),
                        Down::Interrupted => {
                            // The local listener heard the person over the model: the same as
                            // the server's word, without waiting for it.
                            if turn_active {
                                self.interrupt(s, &mut played, &mut fence, turn_active, &last_turn).await;
                            }
                        }
                    }
                }
                _ = tick.tick() => {
                    played.played(self.speaker.take_played());
                    if self.latch.is_stopped() && !self.state.stop_handled {
                        self.halt(s).await;
                    }
                }
            }
        }
    }

    /// The person spoke over the model: silence it, tell the server what was heard (OpenAI's
    /// truncate at the whole ms played), and fence off the rest of the interrupted turn.
    async fn interrupt(
        &mut self,
        s: &mut transport::Socket,
        played: &mut Played,
        fence: &mut Fence,
        turn_active: bool,
        last_turn: &str,
    ) {
        self.speaker.flush();
        played.played(self.speaker.take_played());
        let playing = played
            .playing()
            .map(|(i, ms, len)| (i.to_string(), ms, len));
        if let Some((item, ms, len)) = &playing {
            for f in self.wire.truncate(item, *ms, *len) {
                let _ = s.out.send(f).await;
            }
        }
        // What the model's words were, as far as the person heard them: an item cut before any
        // of it played was never said (its text is not recorded as said); one cut partway is
        // recorded as interrupted. Its words still to come are fenced off until the turn ends.
        let said = std::mem::take(&mut self.state.said);
        match playing {
            Some((_, ms, _)) if ms <= 0.0 => {
                if !said.trim().is_empty() {
                    tracing::info!("realtime: not heard, not recorded as said: {}", said.trim());
                }
            }
            _ if said.trim().is_empty() => {}
            _ => {
                let _ = self
                    .notes
                    .send(Note::Said(format!("{} (interrupted)", said.trim())));
            }
        }
        self.state.mute_said = turn_active;
        played.clear();
        fence.interrupted(turn_active);
        // OpenAI: the response that was speaking never plays again.
        fence.cut_response(last_turn);
    }

    fn dispatch(&mut self) {
        if self.latch.is_stopped() {
            return;
        }
        if let Some(p) = self.state.calls.dispatch() {
            let _ = self.notes.send(Note::Call(p));
        }
    }

    fn flush_heard(&mut self) {
        let heard = std::mem::take(&mut self.state.heard);
        if !heard.trim().is_empty() {
            let _ = self.notes.send(Note::Heard(heard.trim().to_string()));
        }
    }

    fn untold(&mut self, call: &Pending, result: &Value) {
        let _ = self.state.calls.answered(&call.id);
        self.state.call_conn.remove(&call.id);
        self.state.done.push(summary(call, result));
        self.state.untold.push(summary(call, result));
    }

    fn new_latch(&mut self, l: Arc<StopLatch>) {
        self.latch = l;
        self.state.stop_handled = false;
    }

    async fn check_stop_words(&mut self, s: &mut transport::Socket) {
        if self.state.stop_handled {
            return;
        }
        let heard = self.state.heard.to_lowercase();
        let words: Vec<&str> = heard
            .split(|c: char| !c.is_alphanumeric() && c != '\'')
            .filter(|w| !w.is_empty())
            .collect();
        if let Some(w) = self
            .opts
            .stop_words
            .iter()
            .find(|sw| words.contains(&sw.to_lowercase().as_str()))
        {
            self.latch.trigger(Cause::Requested);
            let _ = self.notes.send(Note::StopWord(w.clone()));
            self.halt(s).await;
        }
    }

    /// The latch is set: silence the model, cancel its response, drop calls not yet run.
    async fn halt(&mut self, s: &mut transport::Socket) {
        self.state.stop_handled = true;
        self.speaker.flush();
        self.state.calls.cancel_all();
        for f in self.wire.cancel() {
            let _ = s.out.send(f).await;
        }
    }
}

/// When to leave a connection the server said `goAway` on: the time it names is capped
/// ([`go_away_within`]), so the sum cannot overflow the clock whatever the server sends.
fn leave_by_after_go_away(
    now: tokio::time::Instant,
    left: Option<Duration>,
) -> tokio::time::Instant {
    let within = go_away_within(left);
    now.checked_add(within).unwrap_or(now)
}

/// One line on what a call did, for the replay and for answers that could not be sent.
/// What the model is told of calls that finished while its connection was down or renewed.
fn finished_meanwhile(untold: &[String]) -> String {
    format!(
        "The connection to voxdesk was renewed. Meanwhile the desk finished: {}. Do not repeat \
         those; observe before you act again.",
        untold.join("; ")
    )
}

fn summary(call: &Pending, result: &Value) -> String {
    let mut r = result.clone();
    // An observation's targets are long and stale by the time this is read.
    if let Some(o) = r.as_object_mut() {
        o.remove("targets");
        if let Some(after) = o.get_mut("observation").and_then(Value::as_object_mut) {
            after.remove("targets");
        }
    }
    let s = format!("{}({}) → {}", call.name, call.args, r);
    if s.chars().count() > 600 {
        format!("{}…", s.chars().take(600).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn silence_plays_in_real_time_and_a_flush_drops_the_rest() {
        let mut s = Silent::new();
        s.play(24_000, &vec![0; 24_000]);
        std::thread::sleep(Duration::from_millis(100));
        let heard = s.take_played();
        assert!((2_000..24_000).contains(&heard), "{heard}");
        s.flush();
        std::thread::sleep(Duration::from_millis(20));
        assert!(s.take_played() < 1_000);
    }

    #[test]
    fn a_go_away_of_1_5e19_seconds_is_not_an_instant_overflow() {
        // `Instant + 1.5e19 s` panicked in the network thread (the decoder caps it too).
        let now = tokio::time::Instant::now();
        for left in [
            Some(Duration::from_secs(15_000_000_000_000_000_000)),
            Some(Duration::MAX),
        ] {
            let by = leave_by_after_go_away(now, left);
            assert_eq!(by - now, super::super::turns::GO_AWAY_MAX);
        }
        assert_eq!(
            leave_by_after_go_away(now, Some(Duration::from_secs(10))) - now,
            Duration::from_millis(9_500)
        );
        assert_eq!(
            leave_by_after_go_away(now, None) - now,
            Duration::from_millis(4_500)
        );
    }

    #[test]
    fn a_summary_drops_targets_and_stays_short() {
        let call = Pending {
            id: "1".into(),
            name: "act".into(),
            args: json!({"observation_id": "o1", "actions": [{"action": "click", "target": 3}]}),
        };
        let s = summary(
            &call,
            &json!({"verdict": "verified", "observation": {"observation_id": "o2", "targets": [1, 2, 3]}}),
        );
        assert!(s.starts_with("act({"), "{s}");
        assert!(!s.contains("targets") && s.contains("verified"), "{s}");
        let long = summary(&call, &json!({"x": "y".repeat(2000)}));
        assert!(long.chars().count() <= 601);
    }
}
