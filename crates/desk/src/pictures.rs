//! Step pictures for the session record, drawn and written off the loop by two long-lived writer threads (downscale, numbered boxes, PNG, private file).
//!
//! Why long-lived: each picture allocates a 22 MB downscale buffer. Spawned afresh per picture,
//! the writers landed on different malloc arenas that each kept their freed buffers resident, and
//! the process grew step after step; two threads that live as long as the session reuse their
//! own. Why two: a picture takes ~150 ms and a step makes two; one writer would hold the loop up.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use voxdesk_perception::Target;
use voxdesk_screen::frame::Frame;
use voxdesk_screen::picture::{self, PictureConfig};

struct Job {
    frame: Arc<Frame>,
    targets: Vec<Target>,
    path: PathBuf,
}

pub struct Pictures {
    tx: Option<SyncSender<Job>>,
    threads: Vec<JoinHandle<()>>,
}

impl Pictures {
    pub fn start() -> Pictures {
        // A rendezvous channel: `write` waits while both writers are busy, so at most two
        // pictures (each holding its frame) are in flight.
        let (tx, rx) = mpsc::sync_channel::<Job>(0);
        let rx = Arc::new(Mutex::new(rx));
        let threads = (0..2)
            .filter_map(|i| {
                let rx = rx.clone();
                std::thread::Builder::new()
                    .name(format!("voxdesk-picture-{i}"))
                    .spawn(move || writer(&rx))
                    .ok()
            })
            .collect();
        Pictures {
            tx: Some(tx),
            threads,
        }
    }

    /// Hand a picture to a writer (waits while both are busy).
    pub fn write(&self, frame: Arc<Frame>, targets: Vec<Target>, path: PathBuf) {
        if let Some(tx) = &self.tx {
            if tx
                .send(Job {
                    frame,
                    targets,
                    path,
                })
                .is_err()
            {
                tracing::warn!("step pictures: no writer is running");
            }
        }
    }

    /// Wait until every picture handed over is written.
    pub fn finish(&mut self) {
        self.tx = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Pictures {
    fn drop(&mut self) {
        self.finish();
    }
}

fn writer(rx: &Mutex<Receiver<Job>>) {
    loop {
        let job = match rx.lock() {
            Ok(r) => r.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        let written = picture::annotated(&job.frame, &job.targets, PictureConfig::default())
            .map_err(|e| e.to_string())
            .and_then(|(image, _)| {
                let mut png = Vec::new();
                image
                    .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
                    .map_err(|e| e.to_string())?;
                voxdesk_core::private::write(&job.path, &png).map_err(|e| e.to_string())
            });
        if let Err(e) = written {
            tracing::warn!("step picture {}: {e}", job.path.display());
        }
    }
}
