//! Figures read at scrape time from the counters each area keeps for itself ([`Samples`]),
//! and the [`MetricSource`] a front end registers with the admin listener to add its own
//! (cursors, sessions, its limits) without the metrics module importing it.
//!
//! Not for: events recorded as they happen (the families of `Metrics`).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use super::LatencyHistogram;

/// Something that adds its figures to each scrape of `/metrics`.
pub trait MetricSource: Send + Sync {
    fn sample(&self, samples: &mut Samples);
}

/// One sample's labels: (name, value) pairs.
type Labels = Vec<(&'static str, String)>;

#[derive(Debug)]
enum Values {
    Counter(Vec<(Labels, u64)>),
    Gauge(Vec<(Labels, f64)>),
    Histogram(LatencyHistogram),
}

#[derive(Debug)]
struct SampledFamily {
    name: &'static str,
    /// Ends with a full stop, as the registry writes the help of the recorded families.
    help: String,
    values: Values,
}

/// The figures of one scrape, grouped into families by name.
#[derive(Debug, Default)]
pub struct Samples {
    families: Vec<SampledFamily>,
}

impl Samples {
    fn family(&mut self, name: &'static str, help: &'static str, empty: Values) -> &mut Values {
        let position = match self.families.iter().position(|f| f.name == name) {
            Some(position) => position,
            None => {
                self.families.push(SampledFamily {
                    name,
                    help: format!("{help}."),
                    values: empty,
                });
                self.families.len() - 1
            }
        };
        &mut self.families[position].values
    }

    /// A counter (`_total` is added to `name`).
    pub fn counter(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
        value: u64,
    ) {
        if let Values::Counter(values) = self.family(name, help, Values::Counter(Vec::new())) {
            values.push((owned(labels), value));
        }
    }

    /// A gauge.
    pub fn gauge(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
        value: f64,
    ) {
        if let Values::Gauge(values) = self.family(name, help, Values::Gauge(Vec::new())) {
            values.push((owned(labels), value));
        }
    }

    /// A histogram an area keeps (a handle to it: histograms share their buckets on clone).
    pub fn histogram(
        &mut self,
        name: &'static str,
        help: &'static str,
        histogram: &LatencyHistogram,
    ) {
        self.family(name, help, Values::Histogram(histogram.clone()));
    }
}

fn owned(labels: &[(&'static str, &str)]) -> Labels {
    labels
        .iter()
        .map(|(name, value)| (*name, (*value).to_owned()))
        .collect()
}

impl Collector for Samples {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for family in &self.families {
            match &family.values {
                Values::Counter(values) => {
                    let mut metric = encoder.encode_descriptor(
                        family.name,
                        &family.help,
                        None,
                        MetricType::Counter,
                    )?;
                    for (labels, value) in values {
                        ConstCounter::new(*value).encode(metric.encode_family(labels)?)?;
                    }
                }
                Values::Gauge(values) => {
                    let mut metric = encoder.encode_descriptor(
                        family.name,
                        &family.help,
                        None,
                        MetricType::Gauge,
                    )?;
                    for (labels, value) in values {
                        ConstGauge::new(*value).encode(metric.encode_family(labels)?)?;
                    }
                }
                Values::Histogram(histogram) => {
                    let metric = encoder.encode_descriptor(
                        family.name,
                        &family.help,
                        None,
                        histogram.metric_type(),
                    )?;
                    histogram.encode(metric)?;
                }
            }
        }
        Ok(())
    }
}
