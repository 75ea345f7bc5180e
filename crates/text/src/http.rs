//! The text providers' one HTTP edge: a JSON request POSTed (blocking, on the caller's thread), retried as the official SDKs retry (408, 409, 429 and ≥ 500; `retry-after-ms`, then `retry-after`, else 0.5 s doubling to 8 s), a streamed reply read line by line as server-sent events; the key only in a header, never logged.

use std::io::BufRead;
use std::time::Duration;

use serde_json::Value;

/// Why a request got no reply.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum HttpError {
    #[error("cannot reach {url}: {why}")]
    Connect { url: String, why: String },
    #[error("{url} answered {status}: {message}")]
    Status {
        url: String,
        status: u16,
        message: String,
    },
    #[error("the reply from {url} broke off: {why}")]
    Read { url: String, why: String },
    #[error("stopped while the model was answering")]
    Stopped,
}

/// Where requests go and how they are signed.
#[derive(Clone)]
pub struct Client {
    http: reqwest::blocking::Client,
    pub url: String,
    headers: Vec<(&'static str, String)>,
    /// Retries after the first try (the SDKs' 2).
    pub retries: u32,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The headers carry the key: never shown.
        f.debug_struct("Client").field("url", &self.url).finish()
    }
}

impl Client {
    pub fn new(url: String, headers: Vec<(&'static str, String)>, timeout: Duration) -> Client {
        let http = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(timeout)
            .build()
            .unwrap_or_else(|_| reqwest::blocking::Client::new());
        Client {
            http,
            url,
            headers,
            retries: 2,
        }
    }

    /// POST `body`. Streamed (`stream`): each `data:` payload goes to `on_data` as it arrives
    /// (an error it returns ends the read) and the result is `Value::Null`; else, or when the
    /// server answered with JSON all the same, the reply's JSON. `stopped` is asked between
    /// retries and lines.
    pub fn post(
        &self,
        body: &Value,
        stream: bool,
        on_data: &mut dyn FnMut(&str) -> Result<(), String>,
        stopped: &dyn Fn() -> bool,
    ) -> Result<Value, HttpError> {
        let mut attempt = 0;
        loop {
            if stopped() {
                return Err(HttpError::Stopped);
            }
            let mut req = self.http.post(&self.url).json(body);
            for (k, v) in &self.headers {
                req = req.header(*k, v);
            }
            let resp = match req.send() {
                Ok(r) => r,
                Err(e) => {
                    let err = HttpError::Connect {
                        url: self.url.clone(),
                        why: short(&e),
                    };
                    if attempt < self.retries && (e.is_connect() || e.is_timeout()) {
                        std::thread::sleep(backoff(attempt));
                        attempt += 1;
                        continue;
                    }
                    return Err(err);
                }
            };
            let status = resp.status().as_u16();
            if !resp.status().is_success() {
                let h = |k: &str| {
                    resp.headers()
                        .get(k)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string)
                };
                let wait = retry_after(
                    status,
                    h("x-should-retry").as_deref(),
                    h("retry-after-ms").as_deref(),
                    h("retry-after").as_deref(),
                    attempt,
                );
                let text = resp.text().unwrap_or_default();
                let message = serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| super::openai::error_of(&v).or_else(|| error_any(&v)))
                    .unwrap_or_else(|| text.chars().take(300).collect());
                match wait {
                    Some(d) if attempt < self.retries => {
                        tracing::warn!("text model: {status} from {}; again in {d:?}", self.url);
                        std::thread::sleep(d);
                        attempt += 1;
                        continue;
                    }
                    _ => {
                        return Err(HttpError::Status {
                            url: self.url.clone(),
                            status,
                            message,
                        })
                    }
                }
            }
            // A server that ignores `stream` answers with the whole reply: taken as it is.
            let whole = resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|t| t.starts_with("application/json"));
            if !stream || whole {
                return resp.json::<Value>().map_err(|e| HttpError::Read {
                    url: self.url.clone(),
                    why: short(&e),
                });
            }
            // Server-sent events: the `data:` lines, whatever events name them.
            let reader = std::io::BufReader::new(resp);
            for line in reader.lines() {
                if stopped() {
                    return Err(HttpError::Stopped);
                }
                let line = line.map_err(|e| HttpError::Read {
                    url: self.url.clone(),
                    why: e.to_string(),
                })?;
                if let Some(data) = line.strip_prefix("data:") {
                    on_data(data.trim_start()).map_err(|why| HttpError::Read {
                        url: self.url.clone(),
                        why,
                    })?;
                }
            }
            return Ok(Value::Null);
        }
    }
}

/// An error body of another vendor's shape (`{"type":"error","error":{…}}`, `[{"error":…}]`).
fn error_any(v: &Value) -> Option<String> {
    let e = v.get("error").or_else(|| v.get(0)?.get("error"))?;
    e["message"].as_str().map(str::to_string)
}

/// The error without the URL's query (never a key there, but short in any case).
fn short(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    if let Some(u) = e.url() {
        s = s.replace(u.as_str(), "");
    }
    s.trim().trim_end_matches(['(', ')', ' ']).to_string()
}

/// The SDKs' backoff: 0.5 s doubling, at most 8 s.
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_millis((500u64 << attempt.min(4)).min(8_000))
}

/// How long to wait before trying again, or `None` when the status is not worth a retry
/// (pure; the SDKs' policy: 408, 409, 429 and ≥ 500, `x-should-retry` overriding; the server's
/// own `retry-after-ms` or `retry-after` in seconds when ≤ 120 s, else the backoff).
pub fn retry_after(
    status: u16,
    should_retry: Option<&str>,
    after_ms: Option<&str>,
    after_s: Option<&str>,
    attempt: u32,
) -> Option<Duration> {
    let retry = match should_retry {
        Some("true") => true,
        Some("false") => false,
        _ => matches!(status, 408 | 409 | 429) || status >= 500,
    };
    if !retry {
        return None;
    }
    let server = after_ms
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|ms| ms / 1000.0)
        .or_else(|| after_s.and_then(|v| v.trim().parse::<f64>().ok()))
        .filter(|s| (0.0..=120.0).contains(s));
    Some(server.map_or_else(|| backoff(attempt), Duration::from_secs_f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retried_as_the_sdks_retry() {
        assert_eq!(retry_after(400, None, None, None, 0), None);
        assert_eq!(retry_after(401, None, None, None, 0), None);
        assert_eq!(
            retry_after(429, None, None, Some("3"), 0),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(429, None, Some("250"), Some("3"), 0),
            Some(Duration::from_millis(250))
        );
        // Too long a wait: the backoff instead.
        assert_eq!(
            retry_after(503, None, None, Some("600"), 1),
            Some(Duration::from_secs(1))
        );
        assert_eq!(retry_after(500, Some("false"), None, None, 0), None);
        assert_eq!(
            retry_after(400, Some("true"), None, None, 0),
            Some(backoff(0))
        );
        assert_eq!(backoff(0), Duration::from_millis(500));
        assert_eq!(backoff(9), Duration::from_secs(8));
    }
}
