//! Scenarios: the TOML description of one simulated (or live) run — machine, kernel variant,
//! sysctls, cost model, workload and measurement window. Every field has a documented default;
//! unknown keys and wrong types are errors that name the file, the key and what was expected.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

use crate::variant::Variant;
use crate::workload;

pub mod machine;
pub use machine::{Costs, Device, Machine, Sysctl, UNMODELLED_SYSCTLS};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A short name, used in reports.
    #[serde(default = "default_name")]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Seed for the model's random choices (each block device's transfer-time jitter draws
    /// from a generator seeded with it). The same scenario and seed give the same bytes.
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default)]
    pub machine: Machine,
    #[serde(default)]
    pub variant: Variant,
    #[serde(default)]
    pub sysctl: Sysctl,
    #[serde(default)]
    pub costs: Costs,
    pub workload: WorkloadSpec,
    #[serde(default)]
    pub run: RunWindow,
    /// Values to sweep: `"workload.tasks" = [6, 10, 16]` runs one point per value.
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub sweep: toml::Table,
}

fn default_name() -> String {
    "unnamed".into()
}
fn default_seed() -> u64 {
    1
}

/// The `[workload]` table: its `kind` (one of `workload::REGISTRY`) and that workload's keys,
/// every default filled in once the scenario is read.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkloadSpec {
    pub kind: String,
    #[serde(flatten)]
    pub params: toml::Table,
}

/// When the measured window starts and stops.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StartAt {
    /// At time zero, with empty memory.
    Start,
    /// When kswapd first wakes (seed 000 Test 3 and 4).
    KswapdWake,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StopAt {
    /// After `duration_s` of measurement.
    Duration,
    /// When pgscan_kswapd first increments, or after `duration_s` (seed 000 Test 2).
    KswapdScan,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunWindow {
    pub duration_s: f64,
    pub start_at: StartAt,
    pub stop_at: StopAt,
    /// Longest simulated time spent waiting for `start_at` before giving up.
    pub warmup_limit_s: f64,
    pub sample_interval_s: f64,
    /// Emit vmscan tracepoints into trace.txt.
    pub trace: bool,
}

impl Default for RunWindow {
    fn default() -> Self {
        RunWindow {
            duration_s: 10.0,
            start_at: StartAt::Start,
            stop_at: StopAt::Duration,
            warmup_limit_s: 600.0,
            sample_interval_s: 10.0,
            trace: false,
        }
    }
}

/// A scenario that could not be read: names the file, the key and what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    pub file: String,
    pub key: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: key `{}`: {}", self.file, self.key, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

impl Scenario {
    /// Read a scenario file and apply `key=value` overrides (values in TOML syntax; a bare
    /// word is taken as a string).
    pub fn load(path: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            key: String::new(),
            message: format!("cannot read: {e}"),
        })?;
        Self::parse(&text, &file, overrides)
    }

    pub fn parse(text: &str, file: &str, overrides: &[String]) -> Result<Scenario, ScenarioError> {
        let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| ScenarioError {
            file: file.to_string(),
            key: String::new(),
            message: format!("not valid TOML: {}", e.message()),
        })?;
        for o in overrides {
            let key = o.split('=').next().unwrap_or("").trim().to_string();
            apply_override(&mut table, o).map_err(|message| ScenarioError {
                file: "--set".into(),
                key: key.clone(),
                message,
            })?;
            // A value set on the command line replaces that key's sweep.
            if let Some(toml::Value::Table(sweep)) = table.get_mut("sweep") {
                sweep.remove(&key);
            }
        }
        Self::from_table(table, file)
    }

    pub fn from_table(mut table: toml::Table, file: &str) -> Result<Scenario, ScenarioError> {
        if let Some(toml::Value::Table(sysctl)) = table.get("sysctl") {
            if let Some((key, why)) = UNMODELLED_SYSCTLS
                .iter()
                .find(|(key, _)| sysctl.contains_key(*key))
            {
                return Err(ScenarioError {
                    file: file.into(),
                    key: format!("sysctl.{key}"),
                    message: format!("not modelled by the simulator: {why}; remove the key"),
                });
            }
        }
        if let Some(w) = table.get_mut("workload") {
            resolve_workload(w, file)?;
        }
        let de = toml::Value::Table(table);
        let scenario: Scenario = serde_path_to_error::deserialize(de).map_err(
            |e: serde_path_to_error::Error<toml::de::Error>| {
                let key = e.path().to_string();
                ScenarioError {
                    file: file.to_string(),
                    key: if key == "." { String::new() } else { key },
                    message: e.inner().message().to_string(),
                }
            },
        )?;
        scenario.validate(file)?;
        Ok(scenario)
    }

    fn validate(&self, file: &str) -> Result<(), ScenarioError> {
        let err = |key: &str, message: &str| {
            Err(ScenarioError {
                file: file.into(),
                key: key.into(),
                message: message.into(),
            })
        };
        let m = &self.machine;
        if m.nodes == 0 || m.nodes > 64 {
            return err("machine.nodes", "expected 1 to 64 nodes");
        }
        if m.cpus_per_node == 0 {
            return err(
                "machine.cpus_per_node",
                "expected at least one CPU per node",
            );
        }
        if m.memory_mb_per_node < 64 {
            return err(
                "machine.memory_mb_per_node",
                "expected at least 64 MB per node",
            );
        }
        if m.dma32_mb >= m.memory_mb_per_node {
            return err("machine.dma32_mb", "expected less than memory_mb_per_node");
        }
        let pages = m.nodes as u64 * m.memory_mb_per_node * 256;
        if pages >= (u32::MAX as u64) - 4096 {
            return err(
                "machine.memory_mb_per_node",
                "expected at most 16 TiB in all (32-bit page frame numbers)",
            );
        }
        if m.memory_bandwidth_mb_s_per_node < 0.0 || !m.memory_bandwidth_mb_s_per_node.is_finite() {
            return err(
                "machine.memory_bandwidth_mb_s_per_node",
                "expected a non-negative number (0: unlimited)",
            );
        }
        if m.devices.is_empty() || m.devices.iter().all(|d| d.count == 0) {
            return err("machine.devices", "expected at least one block device");
        }
        for (i, d) in m.devices.iter().enumerate() {
            if d.bandwidth_mb_s <= 0.0 || !d.bandwidth_mb_s.is_finite() {
                return err(
                    &format!("machine.devices[{i}].bandwidth_mb_s"),
                    "expected a positive number",
                );
            }
            if d.latency_us < 0.0 || !d.latency_us.is_finite() {
                return err(
                    &format!("machine.devices[{i}].latency_us"),
                    "expected a non-negative number",
                );
            }
            if !(0.0..=1.0).contains(&d.jitter) {
                return err(
                    &format!("machine.devices[{i}].jitter"),
                    "expected a fraction from 0 to 1",
                );
            }
            if d.max_request_kb < 4 {
                return err(
                    &format!("machine.devices[{i}].max_request_kb"),
                    "expected at least 4",
                );
            }
        }
        if !(1..=16).contains(&self.variant.kswapd_threads) {
            return err(
                "variant.kswapd_threads",
                "expected 1 to 16 (MAX_KSWAPD_THREADS)",
            );
        }
        if self.sysctl.swappiness > 200 {
            return err("sysctl.swappiness", "expected 0 to 200");
        }
        if self.sysctl.watermark_scale_factor == 0 || self.sysctl.watermark_scale_factor > 3000 {
            return err("sysctl.watermark_scale_factor", "expected 1 to 3000");
        }
        if self.sysctl.read_ahead_kb < 4 {
            return err("sysctl.read_ahead_kb", "expected at least 4");
        }
        if self.costs.remote_factor < 1.0 || !self.costs.remote_factor.is_finite() {
            return err("costs.remote_factor", "expected a number ≥ 1");
        }
        let r = &self.run;
        if r.duration_s.is_nan() || r.duration_s <= 0.0 || !r.duration_s.is_finite() {
            return err("run.duration_s", "expected a positive number of seconds");
        }
        if r.sample_interval_s.is_nan()
            || r.sample_interval_s <= 0.0
            || !r.sample_interval_s.is_finite()
        {
            return err(
                "run.sample_interval_s",
                "expected a positive number of seconds",
            );
        }
        Ok(())
    }

    /// The scenario as TOML, every default filled in (the run directory's scenario.toml).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_else(|e| format!("# cannot serialise scenario: {e}\n"))
    }

    /// The sweep points: one scenario per combination of swept values, with a label
    /// such as `workload.tasks=16`. A scenario without a sweep is its own single point.
    pub fn sweep_points(&self, file: &str) -> Result<Vec<(String, Scenario)>, ScenarioError> {
        let mut points = vec![(String::new(), self.clone())];
        for (key, values) in &self.sweep {
            let values = values.as_array().ok_or_else(|| ScenarioError {
                file: file.into(),
                key: format!("sweep.{key}"),
                message: "expected an array of values".into(),
            })?;
            let mut next = Vec::new();
            for (label, base) in &points {
                for v in values {
                    let mut table = toml::Table::try_from(base).map_err(|e| ScenarioError {
                        file: file.into(),
                        key: String::new(),
                        message: e.to_string(),
                    })?;
                    table.remove("sweep");
                    set_path(&mut table, key, v.clone()).map_err(|message| ScenarioError {
                        file: file.into(),
                        key: format!("sweep.{key}"),
                        message,
                    })?;
                    let s = Scenario::from_table(table, file)?;
                    let shown = match v {
                        toml::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let l = if label.is_empty() {
                        format!("{key}={shown}")
                    } else {
                        format!("{label},{key}={shown}")
                    };
                    next.push((l, s));
                }
            }
            points = next;
        }
        Ok(points)
    }
}

/// Check the `[workload]` table against its kind's registration and fill in its defaults,
/// so that an error names `workload.<key>`.
fn resolve_workload(w: &mut toml::Value, file: &str) -> Result<(), ScenarioError> {
    let err = |key: &str, message: String| ScenarioError {
        file: file.into(),
        key: if key.is_empty() {
            "workload".into()
        } else {
            format!("workload.{key}")
        },
        message,
    };
    let table = w
        .as_table_mut()
        .ok_or_else(|| err("", "expected a table".into()))?;
    let kinds = || {
        workload::REGISTRY
            .iter()
            .map(|r| format!("\"{}\"", r.kind))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let kind = match table.remove("kind") {
        None => return Err(err("kind", format!("missing; expected one of {}", kinds()))),
        Some(toml::Value::String(k)) => k,
        Some(_) => return Err(err("kind", "expected a string".into())),
    };
    let registration = workload::lookup(&kind).map_err(|e| err(&e.key, e.message))?;
    let mut resolved = (registration.resolve)(table).map_err(|e| err(&e.key, e.message))?;
    let mut out = toml::Table::new();
    out.insert("kind".into(), toml::Value::String(kind));
    out.extend(std::mem::take(&mut resolved));
    *table = out;
    Ok(())
}

/// A `--set key=value` override: the dotted key and the value (TOML syntax; a bare word is
/// a string). The one parser of overrides, for simulated and live scenarios alike.
pub fn parse_override(o: &str) -> Result<(String, toml::Value), String> {
    let (key, value) = o
        .split_once('=')
        .filter(|(k, _)| !k.trim().is_empty())
        .ok_or_else(|| "expected key=value, e.g. workload.tasks=16".to_string())?;
    let value = value.trim();
    let parsed: toml::Value = match format!("v = {value}").parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(value.into())),
        Err(_) => toml::Value::String(value.into()),
    };
    Ok((key.trim().to_string(), parsed))
}

fn apply_override(table: &mut toml::Table, o: &str) -> Result<(), String> {
    let (key, value) = parse_override(o)?;
    set_path(table, &key, value)
}

fn set_path(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().filter(|s| !s.is_empty()).ok_or("empty key")?;
    let mut cur = table;
    for p in parts {
        let entry = cur
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(Default::default()));
        cur = entry
            .as_table_mut()
            .ok_or_else(|| format!("`{p}` is not a table"))?;
    }
    cur.insert(last.to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = "[workload]\nkind = \"dd\"\ntasks = 4\n";

    #[test]
    fn defaults_fill_a_minimal_scenario() {
        let s = Scenario::parse(MIN, "min.toml", &[]).unwrap();
        assert_eq!(s.sysctl.watermark_scale_factor, 10);
        assert_eq!(s.variant.kswapd_threads, 1);
    }

    #[test]
    fn wrong_type_names_file_key_and_expectation() {
        let text = format!("{MIN}[machine]\nnodes = \"two\"\n");
        let e = Scenario::parse(&text, "bad.toml", &[]).unwrap_err();
        assert_eq!(e.file, "bad.toml");
        assert_eq!(e.key, "machine.nodes");
        assert!(e.message.contains("expected"), "{e}");
        assert!(
            e.to_string().starts_with("bad.toml: key `machine.nodes`:"),
            "{e}"
        );
    }

    #[test]
    fn workload_errors_name_the_nested_key() {
        let e = Scenario::parse(
            "[workload]\nkind = \"dd\"\ntasks = \"many\"\n",
            "w.toml",
            &[],
        )
        .unwrap_err();
        assert_eq!(e.key, "workload.tasks", "{e}");
        let e = Scenario::parse("[workload]\nkind = \"fio\"\n", "w.toml", &[]).unwrap_err();
        assert_eq!(e.key, "workload.kind", "{e}");
        let e = Scenario::parse(
            "[workload]\nkind = \"dd\"\ntasks = 1\nbs = 4\n",
            "w.toml",
            &[],
        )
        .unwrap_err();
        assert!(e.message.contains("bs"), "{e}");
    }

    #[test]
    fn unknown_key_is_an_error() {
        let text = format!("{MIN}[sysctl]\nswapiness = 10\n");
        let e = Scenario::parse(&text, "typo.toml", &[]).unwrap_err();
        assert!(e.key.starts_with("sysctl"), "{e}");
        assert!(e.message.contains("swapiness"), "{e}");
    }

    #[test]
    fn a_sysctl_the_model_ignores_is_refused_by_name() {
        let text = format!("{MIN}[sysctl]\ndirty_ratio = 40\n");
        let e = Scenario::parse(&text, "wb.toml", &[]).unwrap_err();
        assert_eq!(e.key, "sysctl.dirty_ratio");
        assert!(e.message.contains("not modelled"), "{e}");
        let e = Scenario::parse(MIN, "x.toml", &["sysctl.page_cluster=0".into()]).unwrap_err();
        assert_eq!(e.key, "sysctl.page_cluster");
    }

    #[test]
    fn range_errors_name_the_key() {
        let e = Scenario::parse(MIN, "x.toml", &["workload.tasks=1000001".into()]).unwrap_err();
        assert_eq!(e.key, "workload.tasks");
        let e = Scenario::parse(MIN, "x.toml", &["variant.kswapd_threads=17".into()]).unwrap_err();
        assert_eq!(e.key, "variant.kswapd_threads");
    }

    #[test]
    fn overrides_apply_with_toml_types() {
        let s = Scenario::parse(
            MIN,
            "x.toml",
            &[
                "workload.tasks=12".into(),
                "variant.kswapd_threads=4".into(),
            ],
        )
        .unwrap();
        assert_eq!(s.workload.params["tasks"].as_integer(), Some(12));
        assert_eq!(s.variant.kswapd_threads, 4);
    }

    #[test]
    fn sweep_expands_to_points() {
        let text = format!("{MIN}[sweep]\n\"workload.tasks\" = [2, 8]\n");
        let s = Scenario::parse(&text, "s.toml", &[]).unwrap();
        let pts = s.sweep_points("s.toml").unwrap();
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[1].0, "workload.tasks=8");
        assert_eq!(pts[1].1.workload.params["tasks"].as_integer(), Some(8));
        assert!(pts[1].1.sweep.is_empty());
    }

    #[test]
    fn an_override_replaces_the_sweep_of_its_key() {
        let text = format!("{MIN}[sweep]\n\"workload.tasks\" = [2, 8]\n");
        let s = Scenario::parse(&text, "s.toml", &["workload.tasks=5".into()]).unwrap();
        let pts = s.sweep_points("s.toml").unwrap();
        assert_eq!(pts.len(), 1);
        assert_eq!(pts[0].1.workload.params["tasks"].as_integer(), Some(5));
    }

    #[test]
    fn resolved_toml_round_trips() {
        let s = Scenario::parse(MIN, "x.toml", &[]).unwrap();
        let again = Scenario::parse(&s.to_toml(), "again.toml", &[]).unwrap();
        assert_eq!(s.to_toml(), again.to_toml());
    }
}
