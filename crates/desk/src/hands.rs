//! The desk's hands, one device handle: the actuator that sends approved batches, the emergency stop watching the keyboard beside it, and the GUI lock held while they may move. The act pipeline's tests hand the desk a fake.

use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Duration;

use voxdesk_core::config::{Mode, Settings, Stop};
use voxdesk_input::actuator::{Actuator, StepReport};
use voxdesk_input::lock::GuiLock;
use voxdesk_input::stop::{StopLatch, StopWatcher};
use voxdesk_safety::rails::Approved;

use super::DeskError;

/// What the desk acts with.
pub trait Hands {
    /// Run an approved batch; a report per step as it finishes.
    fn run(&self, batch: Approved, rate_limit: Duration) -> Receiver<StepReport>;
    /// A new session's latch: the stop sets it, the actuator obeys it.
    fn rebind(&mut self, latch: Arc<StopLatch>) -> Result<(), DeskError>;
}

/// The real hands: enigo through the actuator thread, the held-combo stop watcher on its own
/// X connection, and the GUI lock (none in observe mode).
pub struct DeviceHands {
    /// The stop combination and how long it is held, for a watcher on a new latch.
    stop: Stop,
    actuator: Actuator,
    _watch: StopWatcher,
    _lock: Option<GuiLock>,
}

impl DeviceHands {
    /// The lock first (two voxdesks must not even plan against each other's work), then the
    /// emergency stop, then the actuator: nothing moves without a stop watching.
    pub fn open(
        settings: &Settings,
        display: &str,
        latch: Arc<StopLatch>,
    ) -> Result<DeviceHands, DeskError> {
        let lock = if settings.rails.mode == Mode::Observe {
            None
        } else {
            Some(
                GuiLock::acquire(display, settings.lock_lease_ms)
                    .map_err(|e| DeskError::RefusedByLock(e.to_string()))?,
            )
        };
        let watch = watcher(&settings.stop, latch.clone())?;
        let actuator = Actuator::start(latch)?;
        Ok(DeviceHands {
            stop: settings.stop.clone(),
            actuator,
            _watch: watch,
            _lock: lock,
        })
    }
}

fn watcher(stop: &Stop, latch: Arc<StopLatch>) -> Result<StopWatcher, DeskError> {
    StopWatcher::start(&stop.combo, Duration::from_millis(stop.hold_ms), latch)
        .map_err(DeskError::NoStop)
}

impl Hands for DeviceHands {
    fn run(&self, batch: Approved, rate_limit: Duration) -> Receiver<StepReport> {
        self.actuator.run(batch, rate_limit)
    }

    fn rebind(&mut self, latch: Arc<StopLatch>) -> Result<(), DeskError> {
        self._watch = watcher(&self.stop, latch.clone())?;
        self.actuator = Actuator::start(latch)?;
        Ok(())
    }
}
