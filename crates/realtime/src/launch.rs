//! What `run` and `listen` share for a realtime model: the session's spec from flags, environment and config (one line naming the fix when something is missing), and the microphone streaming into the session.

use crate::driver::{Spec, SpecError};
use crate::endpoint::Provider;
use crate::session::{Down, Session};
use voxdesk_core::config::Loaded;
use voxdesk_voice::mic::{self, Mic, MicError};

/// The model's frames are this long (both providers take 20–100 ms; short keeps latency low).
pub const FRAME_MS: u32 = 20;

/// The model: the flag, else the config's `realtime.<provider>_model` (never a default).
pub fn model(loaded: &Loaded, provider: &str, flag: Option<&str>) -> Option<String> {
    let rt = &loaded.settings.realtime;
    flag.map(str::to_string).or_else(|| match provider {
        "gemini" => rt.gemini_model.clone(),
        "openai" => rt.openai_model.clone(),
        _ => None,
    })
}

/// The spec for `provider`/`model`: the user's profiles in the config dir's `models/` first.
/// `env` is the binary's view of the environment (the API key and endpoint variables).
pub fn spec(
    loaded: &Loaded,
    provider: &str,
    model: &str,
    endpoint: Option<&str>,
    env: impl Fn(&str) -> Option<String> + Copy,
) -> Result<Spec, SpecError> {
    let p = match provider {
        "gemini" => Provider::Gemini,
        _ => Provider::OpenAi,
    };
    let rt = &loaded.settings.realtime;
    let config_url = match p {
        Provider::Gemini => rt.gemini_url.as_deref(),
        Provider::OpenAi => rt.openai_url.as_deref(),
    };
    let user_models =
        voxdesk_core::config::default_path().and_then(|c| c.parent().map(|d| d.join("models")));
    let cache = capability_dir();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut spec = Spec::resolve(
        p,
        model,
        endpoint,
        env,
        config_url,
        user_models.as_deref(),
        cache.as_deref().map(|d| (d, now)),
        match p {
            Provider::Gemini => rt.gemini_version.as_deref(),
            Provider::OpenAi => None,
        },
    )?;
    spec.stop_words = rt.stop_words.clone();
    spec.max_actions = loaded.settings.rails.max_actions;
    if let Some(w) = &spec.warning {
        tracing::warn!("{w}");
    }
    // How long an unreachable model is retried (`realtime.give_up_ms`; tests shorten it).
    if let Some(ms) = rt.give_up_ms {
        spec.give_up_after = Some(std::time::Duration::from_millis(ms));
    }
    Ok(spec)
}

/// Where `voxdesk probe` caches what it measured (`$XDG_CACHE_HOME/voxdesk/capability`).
pub fn capability_dir() -> Option<std::path::PathBuf> {
    directories::ProjectDirs::from("", "", "voxdesk").map(|d| d.cache_dir().join("capability"))
}

/// Pictures for this deployment: only when its capability record says it uses them, at its
/// JPEG quality, never larger than the 1280x720 picture the targets' boxes are measured in.
pub fn pictures(spec: &Spec) -> Option<voxdesk_screen::picture::PictureConfig> {
    let p = &spec.profile;
    p.sends_pictures()
        .then(|| voxdesk_screen::picture::PictureConfig {
            quality: p.image.jpeg_quality.clamp(10, 100),
            ..Default::default()
        })
}

/// The microphone (`device`, else the default: `voice.mic`), streaming `FRAME_MS` frames at
/// `rate` into the session, and to the local listener when there is one; a full queue drops
/// the frame (counted), never blocks the mic. `echo`: what voxdesk plays, cancelled from the
/// microphone before the model or the listener hears it.
pub fn mic(
    session: &Session,
    rate: u32,
    listener: Option<mic::Tap>,
    device: Option<&str>,
    echo: Option<std::sync::Arc<voxdesk_voice::reference::Reference>>,
) -> Result<Mic, MicError> {
    let Some(tx) = session.audio_in() else {
        return Err(MicError::Open("the session has ended".into()));
    };
    let mut taps = vec![mic::Tap {
        rate,
        frame_ms: FRAME_MS,
        sink: Box::new(move |f| tx.try_send(Down::Audio(f.pcm)).is_ok()),
    }];
    taps.extend(listener);
    Mic::start_cleaned(device, taps, echo)
}

/// The local listener beside a realtime model: barge-in on voxdesk's own voice (the model's
/// speech included) without waiting for the server, and the stop words recognised offline.
/// Without the offline recogniser it still does barge-in (one warning).
pub fn listener(
    session: &Session,
    stop_words: &[String],
    barge: Option<voxdesk_voice::narrate::Barge>,
    latch: std::sync::Arc<voxdesk_input::stop::StopLatch>,
    voice: &voxdesk_core::config::Voice,
) -> Option<voxdesk_voice::listen::Listener> {
    use voxdesk_voice::grammar::Mode;
    use voxdesk_voice::listen::{Listener, Spec};
    let tell = session.audio_in()?;
    let on_interrupt = move || {
        let _ = tell.try_send(Down::Interrupted);
    };
    let start = |recognise: bool| {
        Listener::start(
            Spec::new(stop_words.to_vec(), recognise, Mode::StopOnly).tuned(voice),
            barge.clone(),
            latch.clone(),
            Some(Box::new(on_interrupt.clone())),
        )
    };
    match start(true) {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::warn!("no offline stop words ({e}); barge-in only");
            start(false).ok()
        }
    }
}

/// How a session sounds: spoken aloud, and written to WAVs.
pub struct Voice {
    pub speak: bool,
    pub wav: Option<std::path::PathBuf>,
    /// The settings' voice knobs (the microphone, the listener's).
    pub knobs: voxdesk_core::config::Voice,
}

/// Drive `task` on `desk` by a realtime model (`run` and the daemon): one voice thread owns the
/// speaker (voxdesk's sentences and the model's speech), the local listener hears the person
/// over it, and the microphone streams to the model when there is one.
pub fn drive_realtime(
    desk: &mut voxdesk_desk::Desk,
    spec: &crate::driver::Spec,
    voice: Voice,
    task: &str,
    limits: voxdesk_agent::Limits,
) -> std::io::Result<voxdesk_record::session::Status> {
    use crate::driver::RealtimeDriver;
    use crate::session::{Playback, Silent};
    let latch = desk.latch();
    desk.send_pictures(pictures(spec));
    let narrator =
        voxdesk_voice::narrate::Narrator::new(voice.speak, voice.wav, Some(latch.clone()));
    let speaker: Box<dyn Playback> = match narrator.speaker() {
        Some(s) if voice.speak => Box::new(s),
        _ => Box::new(Silent::new()),
    };
    let barge = narrator.barge();
    let echo = barge
        .as_ref()
        .filter(|_| voice.knobs.echo_cancel)
        .map(|b| b.reference.clone());
    desk.subscribe(Box::new(narrator));
    let session = spec.start(latch.clone(), speaker)?;
    // The person may speak (a stop word, a correction); no microphone is not an error here.
    let local = listener(
        &session,
        &spec.stop_words,
        barge,
        latch.clone(),
        &voice.knobs,
    );
    let tap = local.as_ref().map(|l| l.mic_tap());
    let mic = mic(
        &session,
        spec.profile.input_rate,
        tap,
        voice.knobs.mic.as_deref(),
        echo,
    )
    .map_err(|e| tracing::warn!("{e}; the task runs without listening"))
    .ok();
    let mut driver = RealtimeDriver::new(spec, session, latch, Some(task.to_string()));
    let end = voxdesk_agent::drive(&mut driver, desk, limits);
    drop(mic);
    let stats = driver.finish();
    tracing::info!(
        "realtime: {} connection(s), {} resumed, {} frames in ({} unreadable)",
        stats.connections,
        stats.resumed,
        stats.frames_in,
        stats.frames_bad
    );
    Ok(end.status)
}
