//! Server-sent events as the daemon's clients read them (`voxdesk run` beside a daemon, the serve benchmark): one event at a time from a blocking body.

use std::io::BufRead;

/// One server-sent event: its name and data.
#[derive(Debug, Default, PartialEq)]
pub struct Sse {
    pub id: Option<String>,
    pub event: String,
    pub data: String,
}

/// Read the next event from an SSE body (`None` at its end). Comments (keep-alives) are skipped.
pub fn next_event(r: &mut impl BufRead) -> Option<Sse> {
    let mut e = Sse::default();
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            if !e.event.is_empty() || !e.data.is_empty() {
                return Some(e);
            }
            continue;
        }
        if l.starts_with(':') {
            continue;
        }
        let (k, v) = l.split_once(':').unwrap_or((l, ""));
        let v = v.strip_prefix(' ').unwrap_or(v);
        match k {
            "id" => e.id = Some(v.to_string()),
            "event" => e.event = v.to_string(),
            "data" => {
                if !e.data.is_empty() {
                    e.data.push('\n');
                }
                e.data.push_str(v);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_as_the_stream_sends_them() {
        let body = ": keep-alive\n\nid: 4\nevent: narration\ndata: {\"text\":\"a\"}\n\nid:5\nevent:step\ndata: x\ndata: y\n\n";
        let mut r = std::io::Cursor::new(body.as_bytes());
        let a = next_event(&mut r).unwrap();
        assert_eq!(
            a,
            Sse {
                id: Some("4".into()),
                event: "narration".into(),
                data: "{\"text\":\"a\"}".into()
            }
        );
        let b = next_event(&mut r).unwrap();
        assert_eq!(
            (b.id.as_deref(), b.event.as_str(), b.data.as_str()),
            (Some("5"), "step", "x\ny")
        );
        assert!(next_event(&mut r).is_none());
    }
}
