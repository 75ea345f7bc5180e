//! Who has the floor (pure): frame by frame of the microphone, whether the person is speaking (the detector's score, a level above the room's noise and above what the speaker's own echo explains), and what follows from it: pause the voice, resume it after a false alarm, interrupt it, and where each utterance starts and ends.
//!
//! Time is counted in frames (16 ms each); nothing here reads a clock.

use std::collections::VecDeque;

/// The frame length this is tuned for.
pub const FRAME_MS: u32 = 16;

/// The knobs, chosen from measurements on the virtual sound card (`voxdesk bench voice`).
#[derive(Debug, Clone, PartialEq)]
pub struct Tuning {
    /// A detector score at least this is speech-like.
    pub voiced: f32,
    /// Quieter than this RMS (full scale 1.0) is never speech.
    pub min_level: f32,
    /// Speech is at least this many times the room's noise floor.
    pub over_noise: f32,
    /// While the voice plays, the microphone must be this many times louder than the echo the
    /// measured coupling explains.
    pub echo_margin: f32,
    /// The coupling (echo level ÷ played level) assumed until it has been measured.
    pub echo_default: f32,
    /// Voiced frames in a row, while the voice plays, that pause it.
    pub onset_frames: u32,
    /// Voiced frames after a pause that make it an interruption.
    pub confirm_frames: u32,
    /// Unvoiced frames after a pause, short of a confirmation, that make it a false alarm.
    pub resume_frames: u32,
    /// Voiced frames among the last four that start an utterance.
    pub start_frames: u32,
    /// Unvoiced frames in a row that end it.
    pub end_frames: u32,
    /// In a noisy room (noise floor above `noisy_room`), the unvoiced frames that end it: weak
    /// consonants and the gaps between words sink under the noise, and a command cut in two
    /// is two wrong ones (measured: flite's "click five" under pink noise 10 dB below it).
    pub end_frames_noisy: u32,
    /// A noise floor (RMS, full scale 1.0) above this is a noisy room.
    pub noisy_room: f32,
    /// The longest utterance.
    pub max_frames: u32,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            voiced: 0.5,
            min_level: 0.002,
            over_noise: 2.0,
            echo_margin: 2.0,
            echo_default: 0.5,
            onset_frames: 2,
            confirm_frames: 10,
            resume_frames: 19,
            start_frames: 3,
            end_frames: 10,
            end_frames_noisy: 22,
            noisy_room: 0.005,
            max_frames: 500,
        }
    }
}

/// One frame as the listener saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    /// The voice-activity detector's score, 0..1.
    pub score: f32,
    /// The microphone's RMS level, full scale 1.0.
    pub level: f32,
    /// What the speaker played that the microphone hears now, aligned at the echo path's delay
    /// (`echo::EchoPath`; 0: silent).
    pub echo_ref: f32,
    /// The voice is sounding (or paused by us): speech now is speaking over it.
    pub playing: bool,
    /// The voice is paused.
    pub hushed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The person started speaking over the voice: pause it now.
    Pause,
    /// It was not speech after all: go on.
    Resume,
    /// They kept speaking: drop what the voice was saying.
    Interrupt,
    /// An utterance starts (it began `preroll` frames before this one, at most).
    Start,
    /// It ended; it was this many frames long (with the trailing silence).
    End { frames: u32 },
}

#[derive(Debug, Clone, Copy)]
struct Paused {
    voiced: u32,
    quiet: u32,
    frames: u32,
    /// The microphone's level over what was played on the frame that paused the voice.
    ratio: f32,
    /// Speech-like frames once the echo had drained: a person, however briefly.
    heard: u32,
}

/// Frames after a pause during which the echo of what was played may still arrive (~100 ms).
const ECHO_DRAIN: u32 = 6;

#[derive(Debug, Clone, Copy)]
struct Utterance {
    frames: u32,
    quiet: u32,
    /// Known to be the person's: it began while the voice was silent, or it interrupted the
    /// voice. What the microphone hears while it lasts is theirs, also when a voice plays.
    person: bool,
}

/// How many played frames the coupling is measured over (about 3 s).
const RATIOS: usize = 190;
/// The frames the noise floor is the minimum of (2 s).
const NOISE_WINDOW: usize = 125;

pub struct Floor {
    t: Tuning,
    noise: f32,
    levels: VecDeque<f32>,
    ratios: VecDeque<f32>,
    coupling: f32,
    run: u32,
    recent: u8,
    paused: Option<Paused>,
    utterance: Option<Utterance>,
    /// Pauses that were resumed (false alarms) and that became interruptions.
    pub false_alarms: u32,
    pub interruptions: u32,
}

impl Floor {
    pub fn new(t: Tuning) -> Floor {
        Floor {
            coupling: t.echo_default,
            t,
            noise: 0.0,
            levels: VecDeque::with_capacity(NOISE_WINDOW),
            ratios: VecDeque::with_capacity(RATIOS),
            run: 0,
            recent: 0,
            paused: None,
            utterance: None,
            false_alarms: 0,
            interruptions: 0,
        }
    }

    /// The echo coupling as measured so far.
    pub fn coupling(&self) -> f32 {
        self.coupling
    }

    /// The room's noise: the quietest frame's level in the last two seconds heard.
    pub fn noise(&self) -> f32 {
        self.noise
    }

    pub fn in_utterance(&self) -> bool {
        self.utterance.is_some()
    }

    /// Is this frame speech-like, and is it more than the echo of what was played?
    fn voiced(&mut self, f: &Frame) -> (bool, bool) {
        let speechlike = f.score >= self.t.voiced
            && f.level >= self.t.min_level
            && f.level >= self.noise * self.t.over_noise;
        // The room's noise floor: the quietest of the last two seconds of frames heard while
        // the voice was silent, utterances included (speech has pauses; a steady noise, which
        // the detector may well call speech, has none: learnt only outside utterances, a noise
        // that started one was never learnt and held it open to `max_frames`). Measured against the median:
        // pink noise at 10 dB SNR was no better served (3 % of commands right against 14 %).
        if self.paused.is_none() && !f.playing {
            if self.levels.len() == NOISE_WINDOW {
                self.levels.pop_front();
            }
            self.levels.push_back(f.level);
            self.noise = self.levels.iter().copied().fold(f32::INFINITY, f32::min);
        }
        // The echo's coupling, measured while the voice plays unpaused: the 90th percentile of
        // the microphone's level over what was played (a moment of real speech over the voice
        // moves it little, and the voice pauses at once when one is heard). Not during an
        // utterance known to be the person's: a voice that starts while they speak (the next
        // sentence, after they spoke first or interrupted) is not paused for speech already
        // under way, and a person who went on speaking over it taught it that the echo was as
        // loud as they were; after a few times it was deaf to them whenever it spoke (coupling
        // 1.2–1.6 on a headset, `tests/it/voice.rs`). An utterance that began over the voice
        // and interrupted nothing may be the echo itself: ignoring those too starved the
        // coupling (false barge-ins 0 → 15 % with the speaker looped into the microphone).
        let person = self.utterance.is_some_and(|u| u.person);
        if f.echo_ref > 0.01 && !f.hushed && !person {
            self.learn(f.level / f.echo_ref, 1);
        }
        let beyond_echo =
            f.echo_ref <= 1e-3 || f.level >= self.coupling * self.t.echo_margin * f.echo_ref;
        (speechlike, beyond_echo)
    }

    /// `n` frames whose microphone level was `ratio` times what was played.
    fn learn(&mut self, ratio: f32, n: usize) {
        for _ in 0..n {
            if self.ratios.len() == RATIOS {
                self.ratios.pop_front();
            }
            self.ratios.push_back(ratio);
        }
        if self.ratios.len() >= 60 {
            let mut v: Vec<f32> = self.ratios.iter().copied().collect();
            v.sort_by(f32::total_cmp);
            self.coupling = v[v.len() * 9 / 10].clamp(0.02, 2.0);
        }
    }

    /// Take one frame; what follows from it, in order.
    pub fn step(&mut self, f: &Frame) -> Vec<Event> {
        let (speechlike, beyond_echo) = self.voiced(f);
        // Something starts (a pause, an utterance) only on speech the echo cannot explain.
        let v = speechlike && beyond_echo;
        let mut out = Vec::new();
        self.run = if v { self.run + 1 } else { 0 };
        self.recent = ((self.recent << 1) | u8::from(v)) & 0x0f;
        match &mut self.paused {
            None => {
                // A new run of speech: one that began before, or went on after an interruption or
                // a false alarm, does not pause the voice again.
                if f.playing && !f.hushed && self.run == self.t.onset_frames {
                    self.paused = Some(Paused {
                        voiced: self.run,
                        quiet: 0,
                        frames: 0,
                        // Only where something was played to explain (between its words it
                        // may be nothing, and any sound would look like a huge echo).
                        ratio: if f.echo_ref > 0.01 {
                            f.level / f.echo_ref
                        } else {
                            0.0
                        },
                        heard: 0,
                    });
                    out.push(Event::Pause);
                }
            }
            Some(p) => {
                // Paused, the voice is silent once the echo already on its way has drained
                // (ECHO_DRAIN frames): then speech-like is the person's.
                p.frames += 1;
                let drained = p.frames > ECHO_DRAIN;
                let person = if drained { speechlike } else { v };
                p.heard += u32::from(drained && speechlike);
                if person {
                    p.voiced += 1;
                    p.quiet = 0;
                } else {
                    p.quiet += 1;
                }
                if p.voiced >= self.t.confirm_frames {
                    self.paused = None;
                    self.interruptions += 1;
                    if let Some(u) = &mut self.utterance {
                        u.person = true;
                    }
                    out.push(Event::Interrupt);
                } else if p.quiet >= self.t.resume_frames {
                    // Nothing speech-like once the voice was silent: it was the echo, louder
                    // than the coupling explained (the speakers came on after a headset, or
                    // were turned up). Learnt at once, as a tenth of the window, so that the
                    // same echo does not pause the voice again and again while the coupling
                    // catches up a frame at a time (measured: three false pauses in a row).
                    let (ratio, echo) = (p.ratio, p.heard == 0);
                    self.paused = None;
                    self.false_alarms += 1;
                    if echo && ratio > self.coupling {
                        self.learn(ratio, RATIOS / 10 + 1);
                    }
                    out.push(Event::Resume);
                }
            }
        }
        match &mut self.utterance {
            None => {
                if self.recent.count_ones() >= self.t.start_frames {
                    self.utterance = Some(Utterance {
                        frames: self.recent.count_ones(),
                        quiet: 0,
                        person: !f.playing,
                    });
                    out.push(Event::Start);
                }
            }
            Some(u) => {
                // Once someone is speaking, the voice pauses: the rest of the utterance is
                // judged as speech, not against the echo of a voice that has stopped.
                u.frames += 1;
                u.quiet = if speechlike { 0 } else { u.quiet + 1 };
                let end = if self.noise > self.t.noisy_room {
                    self.t.end_frames_noisy
                } else {
                    self.t.end_frames
                };
                if u.quiet >= end || u.frames >= self.t.max_frames {
                    out.push(Event::End { frames: u.frames });
                    self.utterance = None;
                    self.recent = 0;
                }
            }
        }
        out
    }

    /// The voice was stopped from elsewhere (a stop word, the emergency stop): no pause is
    /// pending any more.
    pub fn reset_pause(&mut self) {
        self.paused = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn speech(level: f32) -> Frame {
        Frame {
            score: 0.9,
            level,
            echo_ref: 0.0,
            playing: false,
            hushed: false,
        }
    }
    fn silence() -> Frame {
        Frame {
            score: 0.02,
            level: 0.0005,
            echo_ref: 0.0,
            playing: false,
            hushed: false,
        }
    }
    fn run(floor: &mut Floor, frames: &[Frame]) -> Vec<(usize, Event)> {
        let mut out = Vec::new();
        for (i, f) in frames.iter().enumerate() {
            for e in floor.step(f) {
                out.push((i, e));
            }
        }
        out
    }

    #[test]
    fn a_steady_noise_the_detector_calls_speech_becomes_the_floor_and_ends_its_utterance() {
        let mut fl = Floor::new(Tuning::default());
        let mut frames = vec![silence(); 20];
        frames.extend(vec![speech(0.05); 400]);
        let ev = run(&mut fl, &frames);
        assert_eq!(ev[0], (22, Event::Start));
        // Once the quiet frames have left the 2 s window the noise is the floor; it is no
        // longer speech, and the utterance ends long before its 500-frame cap.
        match ev.get(1) {
            Some((i, Event::End { frames })) => assert!(*i < 200 && *frames < 200, "{ev:?}"),
            other => panic!("no end: {other:?}"),
        }
    }

    #[test]
    fn an_utterance_starts_after_three_voiced_frames_and_ends_after_the_silence() {
        let mut fl = Floor::new(Tuning::default());
        let mut frames = vec![silence(); 10];
        frames.extend(vec![speech(0.1); 30]);
        frames.extend(vec![silence(); 20]);
        let ev = run(&mut fl, &frames);
        assert_eq!(ev[0], (12, Event::Start));
        // 30 voiced frames, then 10 quiet ones end it: 3 counted at the start, 27 + 10 after.
        assert_eq!(ev[1], (49, Event::End { frames: 40 }));
        assert_eq!(ev.len(), 2);
    }

    #[test]
    fn speech_over_the_voice_pauses_it_then_interrupts_or_resumes() {
        // (voiced frames spoken over the voice, what must follow)
        let table: &[(usize, &[Event])] = &[
            (1, &[]),
            (4, &[Event::Pause, Event::Resume]),
            (30, &[Event::Pause, Event::Interrupt]),
        ];
        for &(n, want) in table {
            let mut fl = Floor::new(Tuning::default());
            let playing = |f: Frame| Frame { playing: true, ..f };
            let mut frames = vec![playing(silence()); 5];
            frames.extend(vec![playing(speech(0.2)); n]);
            frames.extend(vec![playing(silence()); 40]);
            let got: Vec<Event> = run(&mut fl, &frames)
                .into_iter()
                .map(|(_, e)| e)
                .filter(|e| matches!(e, Event::Pause | Event::Resume | Event::Interrupt))
                .collect();
            assert_eq!(got, want, "{n} voiced frames");
        }
    }

    #[test]
    fn the_pause_comes_on_the_second_voiced_frame() {
        let mut fl = Floor::new(Tuning::default());
        run(&mut fl, &[silence(); 5]);
        let f = Frame {
            playing: true,
            ..speech(0.2)
        };
        assert!(fl.step(&f).is_empty());
        assert_eq!(fl.step(&f), vec![Event::Pause]);
    }

    #[test]
    fn its_own_echo_does_not_count_once_the_coupling_is_measured() {
        let mut fl = Floor::new(Tuning::default());
        // The speaker plays at 0.3, the echo comes back at -10 dB (0.095) and the detector
        // calls it speech, as it is.
        let echo = Frame {
            score: 0.9,
            level: 0.095,
            echo_ref: 0.3,
            playing: true,
            hushed: false,
        };
        let ev = run(&mut fl, &vec![echo; 300]);
        assert!(ev.is_empty(), "{ev:?}");
        assert!((0.25..0.4).contains(&fl.coupling()), "{}", fl.coupling());
        // The person speaking at the voice's own level, over it, is heard.
        let over = Frame {
            level: 0.35,
            ..echo
        };
        let ev = run(&mut fl, &[over, over]);
        assert_eq!(ev.last().map(|e| e.1), Some(Event::Pause));
    }

    /// The voice playing at 0.3, heard by nobody: a headset.
    fn playing_quietly() -> Frame {
        Frame {
            echo_ref: 0.3,
            playing: true,
            ..silence()
        }
    }

    /// A floor that has heard a quiet room, then its voice play on a headset (no echo): the
    /// coupling measured, at its floor.
    fn headset() -> Floor {
        let mut fl = Floor::new(Tuning::default());
        run(&mut fl, &[silence(); 100]);
        run(&mut fl, &[playing_quietly(); 100]);
        assert!(fl.coupling() < 0.05);
        fl
    }

    #[test]
    fn speaking_as_the_voice_starts_does_not_teach_it_that_the_echo_is_loud() {
        // A headset: the microphone hears no echo. Ten times the person starts a command just
        // before voxdesk starts to speak (no pause: their speech was under way), and talks on
        // over it.
        let mut fl = headset();
        let quiet = playing_quietly();
        let mut frames = Vec::new();
        for _ in 0..10 {
            frames.extend(vec![silence(); 30]);
            frames.extend(vec![speech(0.15); 5]);
            frames.extend(vec![
                Frame {
                    echo_ref: 0.3,
                    playing: true,
                    ..speech(0.15)
                };
                40
            ]);
            frames.extend(vec![quiet; 30]);
        }
        run(&mut fl, &frames);
        assert!(fl.coupling() < 0.1, "coupling {}", fl.coupling());
        // Spoken over the voice once more, it is heard.
        let over = Frame {
            echo_ref: 0.3,
            playing: true,
            ..speech(0.15)
        };
        let ev = run(&mut fl, &[over; 5]);
        assert!(ev.iter().any(|e| e.1 == Event::Pause), "{ev:?}");
    }

    #[test]
    fn speaking_on_after_interrupting_does_not_teach_it_that_the_echo_is_loud() {
        // A headset again. Ten times the person speaks over the voice: it pauses, they go on,
        // it is dropped, and its next sentence starts while they are still speaking.
        let mut fl = headset();
        #[derive(PartialEq)]
        enum Voice {
            Playing,
            Hushed,
            Dropped(u32),
        }
        let frame = |v: &Voice, level: f32, score: f32| Frame {
            score,
            level,
            echo_ref: if *v == Voice::Playing { 0.3 } else { 0.0 },
            playing: !matches!(v, Voice::Dropped(_)),
            hushed: *v == Voice::Hushed,
        };
        for _ in 0..10 {
            let mut v = Voice::Playing;
            run(&mut fl, &vec![frame(&v, 0.0005, 0.02); 30]);
            for _ in 0..60 {
                for e in fl.step(&frame(&v, 0.15, 0.9)) {
                    v = match e {
                        Event::Pause => Voice::Hushed,
                        Event::Interrupt => Voice::Dropped(0),
                        _ => v,
                    };
                }
                // The next sentence starts 5 frames after the last was dropped.
                v = match v {
                    Voice::Dropped(n) if n >= 5 => Voice::Playing,
                    Voice::Dropped(n) => Voice::Dropped(n + 1),
                    v => v,
                };
            }
            run(&mut fl, &vec![frame(&Voice::Playing, 0.0005, 0.02); 30]);
            run(&mut fl, &[silence(); 30]);
        }
        assert!(fl.coupling() < 0.1, "coupling {}", fl.coupling());
    }

    #[test]
    fn speakers_that_come_on_after_a_headset_pause_the_voice_once() {
        // Learnt on a headset (no echo), then the speakers come on: the voice's echo comes back
        // at 0.3 of what is played, and the detector calls it speech.
        let mut fl = headset();
        let mut pauses = 0;
        for _ in 0..5 {
            // (paused, frames since the pause)
            let mut hushed: Option<u32> = None;
            for _ in 0..120 {
                // Paused, the echo already on its way still arrives for three frames.
                let echo = hushed.is_none_or(|n| n < 3);
                let f = Frame {
                    score: if echo { 0.9 } else { 0.02 },
                    level: if echo { 0.09 } else { 0.0005 },
                    echo_ref: if echo { 0.3 } else { 0.0 },
                    playing: true,
                    hushed: hushed.is_some(),
                };
                hushed = hushed.map(|n| n + 1);
                for e in fl.step(&f) {
                    match e {
                        Event::Pause => {
                            pauses += 1;
                            hushed = Some(0);
                        }
                        Event::Resume => hushed = None,
                        Event::Interrupt => panic!("its own echo interrupted it"),
                        Event::Start | Event::End { .. } => {}
                    }
                }
            }
            run(&mut fl, &[silence(); 30]);
        }
        assert_eq!(pauses, 1, "coupling {}", fl.coupling());
    }

    #[test]
    fn a_click_between_its_words_teaches_it_nothing() {
        let mut fl = headset();
        let quiet = playing_quietly();
        let before = fl.coupling();
        // Between two words (nothing played to explain it), a click of two frames: it pauses
        // the voice, and is gone before the echo has drained.
        let gap = Frame {
            echo_ref: 0.0,
            ..quiet
        };
        let click = Frame {
            score: 0.9,
            level: 0.2,
            ..gap
        };
        let ev = run(&mut fl, &[click, click]);
        assert_eq!(ev.last().map(|e| e.1), Some(Event::Pause));
        let hushed = Frame {
            hushed: true,
            ..gap
        };
        let ev = run(&mut fl, &[hushed; 30]);
        assert!(ev.iter().any(|e| e.1 == Event::Resume), "{ev:?}");
        assert_eq!(fl.coupling(), before);
    }

    #[test]
    fn a_steady_noise_is_not_speech_however_it_scores() {
        let mut fl = Floor::new(Tuning::default());
        let quiet = Frame {
            score: 0.1,
            level: 0.02,
            ..silence()
        };
        run(&mut fl, &vec![quiet; 200]);
        // The noise floor is now 0.02: a detector fooled by a slightly louder noise is not enough.
        let fooled = Frame {
            score: 0.9,
            level: 0.03,
            ..silence()
        };
        assert!(run(&mut fl, &[fooled; 10]).is_empty());
        // Speech well above it is.
        assert!(!run(&mut fl, &[speech(0.2); 10]).is_empty());
    }

    #[test]
    fn in_a_noisy_room_a_gap_between_words_does_not_end_the_utterance() {
        let room = |noise: f32| Frame {
            score: 0.1,
            level: noise,
            ..silence()
        };
        for (noise, gap, ends) in [(0.0, 12, true), (0.01, 12, false), (0.01, 24, true)] {
            let mut fl = Floor::new(Tuning::default());
            let mut frames = vec![room(noise); 130];
            frames.extend(vec![speech(0.2); 20]);
            frames.extend(vec![room(noise); gap]);
            let ev = run(&mut fl, &frames);
            let ended = ev.iter().any(|(_, e)| matches!(e, Event::End { .. }));
            assert_eq!(ended, ends, "noise {noise}, a gap of {gap} frames: {ev:?}");
        }
    }

    #[test]
    fn an_utterance_never_runs_past_the_limit() {
        let t = Tuning {
            max_frames: 50,
            ..Tuning::default()
        };
        let mut fl = Floor::new(t);
        let mut frames = vec![silence(); 5];
        frames.extend(vec![speech(0.1); 60]);
        let ev = run(&mut fl, &frames);
        assert!(ev.contains(&(54, Event::End { frames: 50 })), "{ev:?}");
    }
}
