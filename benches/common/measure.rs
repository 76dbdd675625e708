//! A criterion `Measurement` whose value is a deterministic quantity (tokens or dollars) instead of
//! time, so `--save-baseline` / `--baseline` comparisons show exactly how a change moved a
//! strategy's cache cost. Wall-time baselines are too noisy on shared machines to gate on.

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::Throughput;

/// Measures whatever the benchmark reports through `iter_custom`; `unit` names it.
pub struct Quantity {
    pub unit: &'static str,
}

impl Measurement for Quantity {
    type Intermediate = ();
    type Value = f64;

    fn start(&self) -> Self::Intermediate {}
    fn end(&self, _i: Self::Intermediate) -> Self::Value {
        0.0
    }
    fn add(&self, v1: &Self::Value, v2: &Self::Value) -> Self::Value {
        v1 + v2
    }
    fn zero(&self) -> Self::Value {
        0.0
    }
    fn to_f64(&self, value: &Self::Value) -> f64 {
        *value
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        self
    }
}

impl ValueFormatter for Quantity {
    fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
        self.unit
    }
    fn scale_throughputs(
        &self,
        _typical: f64,
        _throughput: &Throughput,
        _values: &mut [f64],
    ) -> &'static str {
        self.unit
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        self.unit
    }
}
