//! Scenarios: the TOML description of one run, simulated or live — machine, kernel variant,
//! sysctls, cost model, memory and swap set-up, workload and measurement window. One schema for
//! both backends: sections only one side uses (`[costs]`, `[variant]` for the simulator, `[live]`
//! for live runs) are allowed in every file and ignored by the other side, and each backend
//! refuses by key what it cannot honour (`check_backend`). Every field has a documented
//! default; unknown keys and wrong types are errors that name the file, the key and what was
//! expected.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

use crate::variant::Variant;
use crate::workload;

pub mod backend;
pub mod host;
pub mod live;
pub use crate::machine;
pub use crate::sysctl::{Sysctl, SysctlKey, SysctlSettings, SYSCTL_KEYS};
pub use backend::Backend;
pub use host::{host_profile_path, HostProfile, SwapProbe};
pub use live::{LiveOptions, Memory, MemoryMode, Swap, SwapKind};
pub use machine::{Costs, Device, Invalid, Machine};

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
    pub sysctl: SysctlSettings,
    #[serde(default)]
    pub costs: Costs,
    #[serde(default)]
    pub memory: Memory,
    #[serde(default)]
    pub swap: Swap,
    pub workload: WorkloadSpec,
    #[serde(default)]
    pub run: RunWindow,
    /// Live runs only.
    #[serde(default)]
    pub live: LiveOptions,
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
/// every default filled in once the scenario is read; `[workload.background]`, a second
/// workload started alongside (its metrics are not the run's), is one of the keys, or
/// `[[workload.background]]`, several (either backend).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkloadSpec {
    pub kind: String,
    #[serde(flatten)]
    pub params: toml::Table,
}

impl WorkloadSpec {
    /// `[workload.background]`, if the scenario has one (as a table, not a list).
    pub fn background(&self) -> Option<&toml::Table> {
        self.params.get("background").and_then(|b| b.as_table())
    }

    /// Every background workload, in order, with the key that names it: `[workload.background]`
    /// or each `[[workload.background]]` (`workload.background[i]`).
    pub fn backgrounds(&self) -> Vec<(String, &toml::Table)> {
        match self.params.get("background") {
            Some(toml::Value::Table(t)) => vec![("workload.background".into(), t)],
            Some(toml::Value::Array(a)) => a
                .iter()
                .enumerate()
                .filter_map(|(i, v)| Some((format!("workload.background[{i}]"), v.as_table()?)))
                .collect(),
            _ => Vec::new(),
        }
    }
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
    /// Runs of every point: with more than one, each point is run this many times (label
    /// `repeat=K`; simulated runs with seeds `seed`, `seed + 1`, …), and `reclaimlab compare`
    /// gives each point's mean, its standard deviation and whether a change is significant.
    pub repeats: u32,
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
            repeats: 1,
        }
    }
}

impl RunWindow {
    pub fn validate(&self) -> Result<(), Invalid> {
        if !(1..=1000).contains(&self.repeats) {
            return Invalid::err("repeats", "expected 1 to 1000 runs per point");
        }
        for (key, s) in [
            ("duration_s", self.duration_s),
            ("sample_interval_s", self.sample_interval_s),
        ] {
            if s.is_nan() || s <= 0.0 || !s.is_finite() {
                return Invalid::err(key, "expected a positive number of seconds");
            }
        }
        Ok(())
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
    /// `load`, then refuse what `backend` cannot honour.
    pub fn load_for(
        path: &Path,
        overrides: &[String],
        backend: Backend,
    ) -> Result<Scenario, ScenarioError> {
        let s = Self::load(path, overrides)?;
        s.check_backend(backend, &path.display().to_string())?;
        Ok(s)
    }

    /// Read a scenario file and apply `key=value` overrides (values in TOML syntax; a bare
    /// word is taken as a string). The schema's checks only: `check_backend` says whether a
    /// backend can run it.
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
            let set_error = |key: &str, message: String| ScenarioError {
                file: "--set".into(),
                key: key.into(),
                message,
            };
            let (path, value) = parse_override(o).map_err(|m| set_error("", m))?;
            let key = path.join(".");
            set_parts(&mut table, &path, value).map_err(|m| set_error(&key, m))?;
            // A value set on the command line replaces that key's sweep.
            if let Some(toml::Value::Table(sweep)) = table.get_mut("sweep") {
                sweep.remove(&key);
            }
        }
        Self::from_table(table, file)
    }

    pub fn from_table(mut table: toml::Table, file: &str) -> Result<Scenario, ScenarioError> {
        apply_host(&mut table, file)?;
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

    /// Each section's own checks (`validate` beside its fields), in the order of the file's
    /// sections; `[machine.sysctl]` is checked as a `[sysctl]`, after the scenario's own.
    fn validate(&self, file: &str) -> Result<(), ScenarioError> {
        let within = |section: &'static str| {
            move |e: Invalid| ScenarioError {
                file: file.into(),
                key: format!("{section}.{}", e.key),
                message: e.message,
            }
        };
        self.machine.validate().map_err(within("machine"))?;
        self.variant.validate().map_err(within("variant"))?;
        self.sysctl.validate().map_err(within("sysctl"))?;
        self.machine
            .sysctl
            .validate()
            .map_err(within("machine.sysctl"))?;
        self.memory.validate().map_err(within("memory"))?;
        self.swap.validate().map_err(within("swap"))?;
        self.live.validate().map_err(within("live"))?;
        self.costs.validate().map_err(within("costs"))?;
        self.run.validate().map_err(within("run"))?;
        self.validate_mempolicy_nodes(file)
    }

    /// A workload's memory-policy `nodes` are nodes of the machine.
    fn validate_mempolicy_nodes(&self, file: &str) -> Result<(), ScenarioError> {
        let machine_nodes = self.machine.nodes;
        let tables = std::iter::once(("workload".to_string(), &self.workload.params))
            .chain(self.workload.backgrounds());
        for (at, table) in tables {
            let nodes = table.get("nodes").and_then(|n| n.as_array());
            for n in nodes.into_iter().flatten() {
                if n.as_integer()
                    .is_some_and(|n| n >= i64::from(machine_nodes))
                {
                    return Err(ScenarioError {
                        file: file.into(),
                        key: format!("{at}.nodes"),
                        message: format!(
                            "node {n} is not on the machine (machine.nodes = {machine_nodes}: nodes 0 to {})",
                            machine_nodes - 1
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// The sysctls the simulated kernel runs with: `[sysctl]`, then `[machine.sysctl]`,
    /// then the kernel's defaults.
    pub fn effective_sysctl(&self) -> Sysctl {
        self.sysctl.over(&self.machine.sysctl).effective()
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
            let values =
                values
                    .as_array()
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| ScenarioError {
                        file: file.into(),
                        key: format!("sweep.{key}"),
                        message: "expected an array of at least one value".into(),
                    })?;
            if key == "machine.from" {
                return Err(ScenarioError {
                    file: file.into(),
                    key: format!("sweep.{key}"),
                    message: "the host cannot be swept; sweep the machine's own keys".into(),
                });
            }
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
        Ok(with_repeats(points))
    }
}

/// Each point `run.repeats` times, labelled `repeat=K` and seeded `seed + K - 1`; each
/// repeat's own scenario runs once.
fn with_repeats(points: Vec<(String, Scenario)>) -> Vec<(String, Scenario)> {
    let mut out = Vec::with_capacity(points.len());
    for (label, s) in points {
        if s.run.repeats <= 1 {
            out.push((label, s));
            continue;
        }
        for k in 1..=s.run.repeats {
            let mut r = s.clone();
            r.run.repeats = 1;
            r.seed = s.seed.wrapping_add(k as u64 - 1);
            let l = if label.is_empty() {
                format!("repeat={k}")
            } else {
                format!("{label},repeat={k}")
            };
            out.push((l, r));
        }
    }
    out
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
    let background = table.remove("background");
    let registration = workload::lookup(&kind).map_err(|e| err(&e.key, e.message))?;
    if !workload::MEMPOLICY_WORKLOADS.contains(&registration.kind) {
        if let Some(key) = ["mempolicy", "nodes"]
            .into_iter()
            .find(|k| table.contains_key(*k))
        {
            return Err(err(
                key,
                format!(
                    "a memory policy is modelled for the {} workloads only, not `{kind}`; remove it",
                    workload::MEMPOLICY_WORKLOADS.join(" and ")
                ),
            ));
        }
    }
    let mut resolved = (registration.resolve)(table).map_err(|e| err(&e.key, e.message))?;
    let mut out = toml::Table::new();
    out.insert("kind".into(), toml::Value::String(kind));
    out.extend(std::mem::take(&mut resolved));
    if let Some(mut b) = background {
        let resolve_background = |b: &mut toml::Value, at: &str| {
            resolve_workload(b, file).map_err(|e| ScenarioError {
                key: e.key.replacen("workload", at, 1),
                ..e
            })?;
            if b.get("background").is_some() {
                return Err(ScenarioError {
                    file: file.into(),
                    key: format!("{at}.background"),
                    message: "a background workload has none".into(),
                });
            }
            Ok(())
        };
        match &mut b {
            toml::Value::Array(list) => {
                for (i, item) in list.iter_mut().enumerate() {
                    resolve_background(item, &format!("workload.background[{i}]"))?;
                }
            }
            table => resolve_background(table, "workload.background")?,
        }
        out.insert("background".into(), b);
    }
    *table = out;
    Ok(())
}

/// `[machine] from = "host"`: fill the machine from this host's profile (host.rs).
fn apply_host(table: &mut toml::Table, file: &str) -> Result<(), ScenarioError> {
    let Some(toml::Value::Table(machine)) = table.get_mut("machine") else {
        return Ok(());
    };
    match machine.get("from") {
        None => return Ok(()),
        Some(toml::Value::String(s)) if s == "host" => {}
        Some(_) => {
            return Err(ScenarioError {
                file: file.into(),
                key: "machine.from".into(),
                message: "expected \"host\" (the machine this runs on)".into(),
            })
        }
    }
    // Without a profile the key stays, for the simulator to refuse (a live run, which is on
    // the host, does not read [machine]).
    if let Ok(profile) = HostProfile::load() {
        profile.apply(machine);
        profile.apply_costs(table);
    }
    Ok(())
}

/// A `--set key=value` override: the key's path and the value (TOML syntax; a bare word is
/// a string). The key is a TOML dotted key, so a quoted part stays whole:
/// `sweep."workload.tasks"=[2, 8]` sets the sweep's `workload.tasks` axis. The one parser
/// of overrides, for every scenario.
pub fn parse_override(o: &str) -> Result<(Vec<String>, toml::Value), String> {
    let (key, value) = o
        .split_once('=')
        .filter(|(k, _)| !k.trim().is_empty())
        .ok_or_else(|| "expected key=value, e.g. workload.tasks=16".to_string())?;
    Ok((key_path(key)?, parse_value(value)))
}

/// `--sweep key=v1,v2,…`: the `--set` override (as `parse_override` reads it) that adds the
/// axis `key` to the scenario's `[sweep]`, or replaces the file's axis of that key. The
/// values are a TOML array's items (`1,2,4`, `"a","b"`), or else comma-separated values each
/// read as a `--set` value (so bare words are strings: `cluster,vma`).
pub fn sweep_override(axis: &str) -> Result<String, String> {
    let (key, values) = axis
        .split_once('=')
        .map(|(k, v)| (k.trim(), v.trim()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| "expected key=value,value,…, e.g. workload.tasks=1,2,4".to_string())?;
    let values = match parse_value(&format!("[{values}]")) {
        toml::Value::Array(a) => a,
        _ => values.split(',').map(parse_value).collect(),
    };
    if values.is_empty() {
        return Err(format!("{key}: expected at least one value"));
    }
    // Written by the toml crate: the key quoted whole, the values as a TOML array.
    let key = toml::Value::String(key.to_string());
    Ok(format!("sweep.{key} = {}", toml::Value::Array(values)))
}

/// A `--set` value: TOML, or a bare word taken as a string.
fn parse_value(value: &str) -> toml::Value {
    let value = value.trim();
    match format!("v = {value}").parse::<toml::Table>() {
        Ok(mut t) if t.len() == 1 => t.remove("v").unwrap_or(toml::Value::String(value.into())),
        _ => toml::Value::String(value.into()),
    }
}

/// The parts of a TOML dotted key (`a.b`, `sweep."a.b"`), read by the toml crate.
fn key_path(key: &str) -> Result<Vec<String>, String> {
    let bad = || {
        format!(
            "`{}`: not a key; expected a dotted key such as workload.tasks or sweep.\"workload.tasks\"",
            key.trim()
        )
    };
    if key.contains(['\n', '[', ']', '#']) {
        return Err(bad());
    }
    let table: toml::Table = format!("{key} = 0").parse().map_err(|_| bad())?;
    let mut value = toml::Value::Table(table);
    let mut path = Vec::new();
    while let toml::Value::Table(t) = value {
        let mut entries = t.into_iter();
        match (entries.next(), entries.next()) {
            (Some((k, v)), None) => {
                path.push(k);
                value = v;
            }
            _ => return Err(bad()),
        }
    }
    Ok(path)
}

/// Set `key` (parts split at each dot: a sweep axis's key) in `table`.
fn set_path(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    let parts: Vec<String> = key.split('.').map(str::to_string).collect();
    set_parts(table, &parts, value)
}

/// Set the key `path` names in `table`; a part naming a list of tables
/// (`[[workload.background]]`) is followed by the index of one of them
/// (`workload.background.1.size_mb`).
fn set_parts(table: &mut toml::Table, path: &[String], value: toml::Value) -> Result<(), String> {
    let (last, parents) = path
        .split_last()
        .filter(|(l, _)| !l.is_empty())
        .ok_or("empty key")?;
    let mut cur = table;
    let mut i = 0;
    while i < parents.len() {
        let p = &parents[i];
        let entry = cur
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(Default::default()));
        cur = match entry {
            toml::Value::Array(items) => {
                let len = items.len();
                let at = parents
                    .get(i + 1)
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|&n| n < len)
                    .ok_or_else(|| {
                        format!("`{p}` is a list of {len} tables: expected `{p}.N.<key>`, N from 0 to {}", len.saturating_sub(1))
                    })?;
                i += 1;
                items[at]
                    .as_table_mut()
                    .ok_or_else(|| format!("`{p}.{at}` is not a table"))?
            }
            other => other
                .as_table_mut()
                .ok_or_else(|| format!("`{p}` is not a table"))?,
        };
        i += 1;
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
        assert_eq!(s.sysctl.watermark_scale_factor, None);
        assert_eq!(s.sysctl.effective().watermark_scale_factor, 10);
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
    fn device_fractions_are_checked_by_key() {
        for key in ["jitter", "latency_jitter"] {
            let text = format!(
                "{MIN}[machine]\ndevices = [{{ name = \"nvme\", count = 1, {key} = 1.5 }}]\n"
            );
            let e = Scenario::parse(&text, "d.toml", &[]).unwrap_err();
            assert_eq!(e.key, format!("machine.devices[0].{key}"), "{e}");
            assert!(e.message.contains("fraction from 0 to 1"), "{e}");
        }
        // A device without the key resolves to the text it had before the key existed.
        let s = Scenario::parse(MIN, "min.toml", &[]).unwrap();
        assert!(!toml::to_string(&s.machine)
            .unwrap()
            .contains("latency_jitter"));
    }

    #[test]
    fn flash_dies_need_their_program_time() {
        let dev = |keys: &str| {
            format!("{MIN}[machine]\ndevices = [{{ name = \"nvme\", count = 1, {keys} }}]\n")
        };
        for (keys, key, expected) in [
            ("dies = 64", "dies", "together"),
            ("program_us = 1600.0", "dies", "together"),
            ("dies = 64, program_us = -1.0", "program_us", "non-negative"),
            ("dies = -4, program_us = 1600.0", "dies", "u32"),
            ("dies = 100000, program_us = 1600.0", "dies", "at most"),
            ("dies = 64, program_us = 0.01", "program_us", "4 KiB page"),
            (
                "dies = 64, program_us = 1600.0, rotational = true",
                "dies",
                "non-rotational",
            ),
        ] {
            let e = Scenario::parse(&dev(keys), "d.toml", &[]).unwrap_err();
            assert_eq!(e.key, format!("machine.devices[0].{key}"), "{keys}: {e}");
            assert!(e.message.contains(expected), "{keys}: {e}");
        }
        let s = Scenario::parse(&dev("dies = 64, program_us = 1600.0"), "d.toml", &[]).unwrap();
        assert_eq!(
            (s.machine.devices[0].dies, s.machine.devices[0].program_us),
            (64, 1600.0)
        );
        // Without them, a resolved scenario's text is what it was before the keys existed.
        let text =
            toml::to_string(&Scenario::parse(MIN, "min.toml", &[]).unwrap().machine).unwrap();
        assert!(
            !text.contains("dies") && !text.contains("program_us"),
            "{text}"
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
    fn a_bad_dirty_limit_names_the_file_the_key_and_what_was_expected() {
        for (value, expected) in [("-5", "expected u32"), ("101", "expected 0 to 100")] {
            let text = format!("{MIN}[sysctl]\ndirty_ratio = {value}\n");
            let e = Scenario::parse(&text, "wb.toml", &[]).unwrap_err();
            assert_eq!(
                (e.file.as_str(), e.key.as_str()),
                ("wb.toml", "sysctl.dirty_ratio")
            );
            assert!(e.message.contains(expected), "{e}");
            let shown = e.to_string();
            assert!(
                shown.starts_with("wb.toml: key `sysctl.dirty_ratio`: "),
                "{shown}"
            );
        }
        let text = format!("{MIN}[sysctl]\ndirty_bytes = 4096\n");
        let e = Scenario::parse(&text, "wb.toml", &[]).unwrap_err();
        assert_eq!(e.key, "sysctl.dirty_bytes");
        assert!(e.message.contains("at least 8192"), "{e}");
    }

    #[test]
    fn unknown_key_is_an_error() {
        let text = format!("{MIN}[sysctl]\nswapiness = 10\n");
        let e = Scenario::parse(&text, "typo.toml", &[]).unwrap_err();
        assert!(e.key.starts_with("sysctl"), "{e}");
        assert!(e.message.contains("swapiness"), "{e}");
    }

    #[test]
    fn a_memory_policy_is_checked_against_its_workload_and_the_machine() {
        let two = "[machine]\nnodes = 2\n";
        let parse = |text: &str| Scenario::parse(text, "p.toml", &[]);
        let ok = parse(&format!(
            "{two}[workload]\nkind = \"dd\"\ntasks = 2\nmempolicy = \"bind\"\nnodes = [0]\n"
        ))
        .unwrap();
        assert_eq!(ok.workload.params["mempolicy"].as_str(), Some("bind"));
        // The default policy is not written into the resolved scenario.
        let plain = parse(&format!("{two}{MIN}")).unwrap();
        assert!(!plain.to_toml().contains("mempolicy"));
        let cases = [
            (
                "[workload]\nkind = \"dd\"\ntasks = 2\nmempolicy = \"bind\"\nnodes = [2]\n",
                "workload.nodes",
                "node 2 is not on the machine (machine.nodes = 2: nodes 0 to 1)",
            ),
            (
                "[workload]\nkind = \"dd\"\ntasks = 2\nmempolicy = \"interleave\"\n",
                "workload.nodes",
                "expected at least one node",
            ),
            (
                "[workload]\nkind = \"dd\"\ntasks = 2\nnodes = [1]\n",
                "workload.nodes",
                "takes no nodes",
            ),
            (
                "[workload]\nkind = \"usemem\"\nmempolicy = \"preferred\"\nnodes = [0, 1]\n",
                "workload.nodes",
                "takes one node",
            ),
            (
                "[workload]\nkind = \"usemem\"\nmempolicy = \"bind\"\nnodes = [1, 1]\n",
                "workload.nodes",
                "node 1 is listed twice",
            ),
            (
                "[workload]\nkind = \"dd\"\ntasks = 2\nmempolicy = \"first-touch\"\nnodes = [0]\n",
                "workload.mempolicy",
                "unknown variant `first-touch`",
            ),
            (
                "[workload]\nkind = \"fs_mark\"\nmempolicy = \"bind\"\nnodes = [0]\n",
                "workload.mempolicy",
                "modelled for the dd and usemem workloads only, not `fs_mark`",
            ),
        ];
        for (workload, key, message) in cases {
            let e = parse(&format!("{two}{workload}")).unwrap_err();
            assert_eq!(e.key, key, "{e}");
            assert!(e.message.contains(message), "{e}");
        }
    }

    #[test]
    fn zone_reclaim_mode_is_checked_and_refused_beside_the_zonelist_cache() {
        let e = Scenario::parse(
            &format!("{MIN}[sysctl]\nzone_reclaim_mode = 8\n"),
            "z.toml",
            &[],
        )
        .unwrap_err();
        assert_eq!(e.key, "sysctl.zone_reclaim_mode");
        assert!(e.message.contains("expected 0 to 7"), "{e}");
        let e = refused(
            &format!("{MIN}[sysctl]\nzone_reclaim_mode = 1\n[variant]\nzonelist_cache = true\n"),
            &[],
            Backend::Simulator,
        );
        assert_eq!(e.key, "sysctl.zone_reclaim_mode");
        assert!(e.message.contains("variant.zonelist_cache = false"), "{e}");
        let s = Scenario::parse(MIN, "z.toml", &["sysctl.zone_reclaim_mode=7".into()]).unwrap();
        s.check_backend(Backend::Simulator, "z.toml").unwrap();
        assert_eq!(s.effective_sysctl().zone_reclaim_mode, 7);
        assert_eq!(s.effective_sysctl().min_unmapped_ratio, 1);
    }

    #[test]
    fn a_live_run_refuses_a_memory_policy() {
        let text = "[machine]\nnodes = 2\n[workload]\nkind = \"dd\"\ntasks = 2\nmempolicy = \"preferred\"\nnodes = [1]\n";
        let e = refused(text, &[], Backend::Live);
        assert_eq!(e.key, "workload.mempolicy");
        assert!(
            e.message.contains("NUMA node") || e.message.contains("numactl"),
            "{e}"
        );
    }

    fn refused(text: &str, sets: &[&str], backend: Backend) -> ScenarioError {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let s = Scenario::parse(text, "x.toml", &sets).expect("the schema accepts it");
        s.check_backend(backend, "x.toml")
            .expect_err("the backend refuses it")
    }

    #[test]
    fn every_sysctl_is_modelled_so_the_simulator_refuses_none() {
        // The refusal of an unmodelled key stays (`SysctlKey::unmodelled`); since watermark
        // boosting is modelled no key has a reason, and both backends take every key.
        assert!(
            crate::sysctl::SYSCTL_KEYS
                .iter()
                .all(|k| k.unmodelled.is_none()),
            "{:?}",
            crate::sysctl::SYSCTL_KEYS
        );
        let text = format!("{MIN}[sysctl]\nwatermark_boost_factor = 0\n");
        let s = Scenario::parse(&text, "x.toml", &[]).unwrap();
        s.check_backend(Backend::Simulator, "x.toml").unwrap();
        let s = Scenario::parse(MIN, "x.toml", &["sysctl.page_cluster=0".into()]).unwrap();
        s.check_backend(Backend::Simulator, "x.toml").unwrap();
        let s = Scenario::parse(&text, "x.toml", &["workload.file_mb=64".into()]).unwrap();
        s.check_backend(Backend::Live, "x.toml").unwrap();
        let e = Scenario::parse(MIN, "x.toml", &["sysctl.watermark_boost_factor=-1".into()]);
        assert!(e.is_err());
    }

    #[test]
    fn each_backend_refuses_by_key_what_it_cannot_honour() {
        for (sets, key) in [
            (
                &["memory.mode=cgroup", "memory.limit_mb=512"][..],
                "memory.mode",
            ),
            (
                &["swap.kind=file", "swap.size_mb=2000000"][..],
                "swap.size_mb",
            ),
        ] {
            let e = refused(MIN, sets, Backend::Simulator);
            assert_eq!(e.key, key, "{e}");
            assert!(e.message.contains("the simulator cannot honour it"), "{e}");
        }
        let e = refused(
            MIN,
            &["memory.mode=squeeze", "memory.free_mb=4096"],
            Backend::Simulator,
        );
        assert_eq!(e.key, "memory.free_mb", "{e}");
        let e = refused(MIN, &[], Backend::Live);
        assert_eq!(e.key, "workload.file_mb", "{e}");
        for (sets, key) in [
            (&["variant.kswapd_threads=4"][..], "variant.kswapd_threads"),
            (
                &["variant.swap_readahead=\"cluster\""][..],
                "variant.swap_readahead",
            ),
            (&["run.start_at=kswapd_wake"][..], "run.start_at"),
            (&["run.stop_at=kswapd_scan"][..], "run.stop_at"),
            (&["sysctl.read_ahead_kb=256"][..], "sysctl.read_ahead_kb"),
            (
                &["workload.kind=dd-write", "workload.jobs=0"][..],
                "workload.jobs",
            ),
        ] {
            let e = refused(MIN, sets, Backend::Live);
            assert_eq!(e.key, key, "{e}");
            assert!(e.message.contains("a live run cannot honour it"), "{e}");
        }
        // What the other side alone uses is allowed: [costs] and [machine] for a live run,
        // [live] for the simulator.
        let both =
            format!("{MIN}file_mb = 64\n[costs]\nisolate_ns = 90\n[live]\ndrop_caches = false\n");
        let s = Scenario::parse(&both, "x.toml", &[]).unwrap();
        s.check_backend(Backend::Simulator, "x.toml").unwrap();
        s.check_backend(Backend::Live, "x.toml").unwrap();
    }

    #[test]
    fn a_set_reaches_one_of_a_list_of_background_workloads_by_index() {
        let text = "[workload]\nkind = \"usemem\"\n[[workload.background]]\nkind = \"dd\"\n\
                    tasks = 1\n[[workload.background]]\nkind = \"usemem\"\n";
        let sets = ["workload.background.1.size_mb=64".to_string()];
        let s = Scenario::parse(text, "bg.toml", &sets).unwrap();
        let bgs = s.workload.backgrounds();
        assert_eq!(bgs[1].1["size_mb"].as_integer(), Some(64));
        assert_eq!(bgs[0].1.get("size_mb"), None);
        for (set, key) in [
            (
                "workload.background.2.size_mb=64",
                "workload.background.2.size_mb",
            ),
            (
                "workload.background.size_mb=64",
                "workload.background.size_mb",
            ),
        ] {
            let e = Scenario::parse(text, "bg.toml", &[set.into()]).unwrap_err();
            assert_eq!(e.key, key, "{e}");
            assert!(e.message.contains("list of 2 tables"), "{e}");
        }
    }

    #[test]
    fn a_background_workload_is_checked_with_its_own_keys() {
        let text = "[workload]\nkind = \"usemem\"\n[workload.background]\nkind = \"usemem\"\nrandom = \"yes\"\n";
        let e = Scenario::parse(text, "bg.toml", &[]).unwrap_err();
        assert_eq!(e.key, "workload.background.random", "{e}");
        let ok = text.replace("\"yes\"", "true");
        let s = Scenario::parse(&ok, "bg.toml", &[]).unwrap();
        let bg = s.workload.background().unwrap();
        assert_eq!(bg["size_mb"].as_integer(), Some(256), "defaults filled in");
        s.check_backend(Backend::Live, "bg.toml").unwrap();
        s.check_backend(Backend::Simulator, "bg.toml").unwrap();
        let sim_only = ok.replace(
            "[workload.background]\nkind = \"usemem\"\nrandom = true",
            "[workload.background]\nkind = \"hugetlb\"",
        );
        let s = Scenario::parse(&sim_only, "bg.toml", &[]).unwrap();
        s.check_backend(Backend::Simulator, "bg.toml").unwrap();
        let e = s.check_backend(Backend::Live, "bg.toml").unwrap_err();
        assert_eq!(e.key, "workload.background.kind");
    }

    #[test]
    fn several_background_workloads_are_each_checked_for_either_backend() {
        let text = "[workload]\nkind = \"usemem\"\n[[workload.background]]\nkind = \"dd\"\ntasks = 1\n[[workload.background]]\nkind = \"usemem\"\nrandom = \"yes\"\n";
        let e = Scenario::parse(text, "bg.toml", &[]).unwrap_err();
        assert_eq!(e.key, "workload.background[1].random", "{e}");
        let s = Scenario::parse(&text.replace("\"yes\"", "true"), "bg.toml", &[]).unwrap();
        let bgs = s.workload.backgrounds();
        assert_eq!(bgs.len(), 2);
        assert_eq!(bgs[0].0, "workload.background[0]");
        assert_eq!(bgs[0].1["kind"].as_str(), Some("dd"));
        assert_eq!(
            bgs[1].1["size_mb"].as_integer(),
            Some(256),
            "defaults filled in"
        );
        assert!(s.workload.background().is_none());
        s.check_backend(Backend::Simulator, "bg.toml").unwrap();
        s.check_backend(Backend::Live, "bg.toml").unwrap();
        // Each of them is checked for a live run by its own key.
        let sim_only = text.replace("kind = \"usemem\"\nrandom = \"yes\"", "kind = \"hugetlb\"");
        let s2 = Scenario::parse(&sim_only, "bg.toml", &[]).unwrap();
        s2.check_backend(Backend::Simulator, "bg.toml").unwrap();
        let e = s2.check_backend(Backend::Live, "bg.toml").unwrap_err();
        assert_eq!(e.key, "workload.background[1].kind", "{e}");
        // The resolved text says what was read, and reads back the same.
        let again = Scenario::parse(&s.to_toml(), "bg.toml", &[]).unwrap();
        assert_eq!(again.to_toml(), s.to_toml());
    }

    #[test]
    fn machine_sysctls_are_checked_and_named_as_such() {
        let e =
            Scenario::parse(MIN, "x.toml", &["machine.sysctl.swappiness=900".into()]).unwrap_err();
        assert_eq!(e.key, "machine.sysctl.swappiness", "{e}");
        let e = Scenario::parse(MIN, "x.toml", &["sysctl.swappiness=900".into()]).unwrap_err();
        assert_eq!(e.key, "sysctl.swappiness", "{e}");
    }

    #[test]
    fn a_sweep_needs_values_and_cannot_sweep_the_host() {
        for (sweep, key) in [
            ("\"workload.tasks\" = []", "sweep.workload.tasks"),
            ("\"machine.from\" = [\"host\"]", "sweep.machine.from"),
        ] {
            let text = format!("{MIN}[sweep]\n{sweep}\n");
            let s = Scenario::parse(&text, "s.toml", &[]).unwrap();
            let e = s.sweep_points("s.toml").unwrap_err();
            assert_eq!(e.key, key, "{e}");
        }
    }

    #[test]
    fn mode_keys_need_their_sizes() {
        let e = Scenario::parse(MIN, "x.toml", &["memory.mode=squeeze".into()]).unwrap_err();
        assert_eq!(e.key, "memory.free_mb");
        let e = Scenario::parse(MIN, "x.toml", &["swap.kind=zram".into()]).unwrap_err();
        assert_eq!(e.key, "swap.size_mb");
        let e = Scenario::parse(MIN, "x.toml", &["memory.mode=tmpfs".into()]).unwrap_err();
        assert_eq!(e.key, "memory.mode");
    }

    #[test]
    fn range_errors_name_the_key() {
        let e = Scenario::parse(MIN, "x.toml", &["workload.tasks=1000001".into()]).unwrap_err();
        assert_eq!(e.key, "workload.tasks");
        let e = Scenario::parse(MIN, "x.toml", &["variant.kswapd_threads=17".into()]).unwrap_err();
        assert_eq!(e.key, "variant.kswapd_threads");
        let e = Scenario::parse(MIN, "x.toml", &["costs.usemem_word_ns=0".into()]).unwrap_err();
        assert_eq!(e.key, "costs.usemem_word_ns");
    }

    #[test]
    fn further_swap_areas_are_checked_and_named_by_their_place() {
        let parse = |sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            Scenario::parse(MIN, "x.toml", &sets)
        };
        let zram = ["swap.kind=zram", "swap.size_mb=64"];
        let with = |also: &str| {
            let mut v = zram.to_vec();
            v.push(also);
            parse(&v)
        };
        let s = with(r#"swap.also=[{kind="file", size_mb=512, priority=5}]"#).unwrap();
        let areas: Vec<i32> = s.swap.areas().map(|a| a.priority).collect();
        assert_eq!(areas, [100, 5]);
        let e =
            with(r#"swap.also=[{kind="file", size_mb=1}, {kind="file", size_mb=0}]"#).unwrap_err();
        assert_eq!(e.key, "swap.also[1].size_mb");
        let e = with(r#"swap.also=[{kind="none"}]"#).unwrap_err();
        assert_eq!(e.key, "swap.also[0].kind");
        let e = with(r#"swap.also=[{kind="file", size_mb=1, priority=-5}]"#).unwrap_err();
        assert_eq!(e.key, "swap.also[0].priority");
        let e = with(r#"swap.also=[{kind="file", size_mb=1, sizes=2}]"#).unwrap_err();
        assert!(e.key.starts_with("swap.also"), "{e}");
        let four = r#"swap.also=[{kind="file", size_mb=1}, {kind="file", size_mb=1}, {kind="file", size_mb=1}, {kind="file", size_mb=1}]"#;
        assert_eq!(with(four).unwrap_err().key, "swap.also");
        let e = parse(&[r#"swap.also=[{kind="file", size_mb=1}]"#]).unwrap_err();
        assert_eq!(e.key, "swap.kind");
        // One area serializes as before: no `also`.
        assert!(!toml::to_string(&parse(&zram).unwrap().swap)
            .unwrap()
            .contains("also"));
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
    fn repeats_run_every_point_with_its_own_seed() {
        let text =
            format!("seed = 7\n{MIN}[run]\nrepeats = 3\n[sweep]\n\"workload.tasks\" = [2, 8]\n");
        let s = Scenario::parse(&text, "r.toml", &[]).unwrap();
        let pts = s.sweep_points("r.toml").unwrap();
        let labels: Vec<&str> = pts.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            labels,
            [
                "workload.tasks=2,repeat=1",
                "workload.tasks=2,repeat=2",
                "workload.tasks=2,repeat=3",
                "workload.tasks=8,repeat=1",
                "workload.tasks=8,repeat=2",
                "workload.tasks=8,repeat=3"
            ]
        );
        let seeds: Vec<u64> = pts.iter().map(|(_, p)| p.seed).collect();
        assert_eq!(seeds, [7, 8, 9, 7, 8, 9]);
        assert!(pts.iter().all(|(_, p)| p.run.repeats == 1));
        let e = Scenario::parse(MIN, "r.toml", &["run.repeats=0".into()]).unwrap_err();
        assert_eq!(e.key, "run.repeats");
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
    fn a_quoted_dotted_key_stays_whole() {
        let s =
            Scenario::parse(MIN, "q.toml", &[r#"sweep."workload.tasks"=[2, 8]"#.into()]).unwrap();
        let labels: Vec<String> = s
            .sweep_points("q.toml")
            .unwrap()
            .into_iter()
            .map(|(l, _)| l)
            .collect();
        assert_eq!(labels, ["workload.tasks=2", "workload.tasks=8"]);
        assert_eq!(parse_override("a . b=1").unwrap().0, ["a", "b"]);
        assert!(parse_override("a..b=1").is_err());
        assert!(parse_override("a]=1").is_err());
    }

    #[test]
    fn a_sweep_option_adds_or_replaces_one_axis() {
        let text = format!("{MIN}[sweep]\n\"workload.tasks\" = [2, 8]\n");
        let axis = |a: &str| sweep_override(a).unwrap();
        let labels = |sets: &[String]| -> Vec<String> {
            let s = Scenario::parse(&text, "s.toml", sets).unwrap();
            s.sweep_points("s.toml")
                .unwrap()
                .into_iter()
                .map(|(l, _)| l)
                .collect()
        };
        assert_eq!(
            axis("workload.tasks=1,2,4"),
            r#"sweep."workload.tasks" = [1, 2, 4]"#
        );
        assert_eq!(
            axis("variant.swap_readahead=cluster,vma"),
            r#"sweep."variant.swap_readahead" = ["cluster", "vma"]"#
        );
        assert_eq!(
            labels(&[axis("workload.tasks=1,4")]),
            ["workload.tasks=1", "workload.tasks=4"]
        );
        assert_eq!(
            labels(&[axis("variant.kswapd_threads=1,4")]),
            [
                "workload.tasks=2,variant.kswapd_threads=1",
                "workload.tasks=2,variant.kswapd_threads=4",
                "workload.tasks=8,variant.kswapd_threads=1",
                "workload.tasks=8,variant.kswapd_threads=4"
            ]
        );
        assert!(sweep_override("workload.tasks=").is_err());
        assert!(sweep_override("=1,2").is_err());
    }

    #[test]
    fn resolved_toml_round_trips() {
        let s = Scenario::parse(MIN, "x.toml", &[]).unwrap();
        let again = Scenario::parse(&s.to_toml(), "again.toml", &[]).unwrap();
        assert_eq!(s.to_toml(), again.to_toml());
    }
}
