//! mmtests' simple-writeback as dd-write's `cpu_factors` runs it (seed 001): the rounds'
//! jobs and sizes against shellpack-bench-simple-writeback's arithmetic, a run that ends
//! after its last round with every file's page cache gone, determinism, and bad input.

use std::ops::ControlFlow;

use reclaim_sim::kernel::Kernel;
use reclaim_sim::mm::page::pg;
use reclaim_sim::run::simulate;
use reclaim_sim::workload::dd_write::{simple_writeback_rounds, Round};
use reclaim_sim::{RunOutput, Scenario};

const DD_WRITE: &str = include_str!("../../../scenarios/sim/dd-write.toml");
const FILE: &str = "scenarios/sim/dd-write.toml";

/// dd-write's small machine at 512 MB, 4 CPUs: three rounds (4, 8 and 16 jobs) writing
/// 512 MiB each, with `sets`.
fn scenario(sets: &[&str]) -> Result<Scenario, String> {
    let mut all: Vec<String> = [
        "machine.memory_mb_per_node=512",
        "workload.jobs=1",
        "workload.file_mb=128",
        "workload.cpu_factors=[1, 2, 4]",
        "run.duration_s=300.0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    all.extend(sets.iter().map(|s| s.to_string()));
    Scenario::parse(DD_WRITE, FILE, &all).map_err(|e| e.to_string())
}

fn run(s: &Scenario) -> (Kernel, RunOutput) {
    simulate(s, None, &mut |_| ControlFlow::Continue(())).expect("a run to its end")
}

#[test]
fn the_rounds_are_the_shellpacks_arithmetic() {
    // 3 CPUs, FILESIZE 15 MiB, BS 1 MiB: 15 MiB / 3 / 1 MiB = 5 blocks; / 6 = 2.5 → 2;
    // / 12 = 1.25 → 1 (shell integer division).
    let r = |cpu_factor, jobs, blocks| Round {
        cpu_factor,
        jobs,
        blocks,
    };
    assert_eq!(
        simple_writeback_rounds(3, 5, 1024, &[1, 2, 4]),
        vec![r(1, 3, 5), r(2, 6, 2), r(4, 12, 1)]
    );
    // The seed's 512 MB machine, 4 CPUs, FILESIZE = 4 × 512 MiB, BS 1 MiB: 512 MiB a job
    // at factor 1, halving each round to 8 MiB for the 256 jobs of factor 64.
    let seed = simple_writeback_rounds(4, 512, 1024, &[1, 2, 4, 8, 16, 32, 64]);
    let jobs: Vec<u64> = seed.iter().map(|r| r.jobs).collect();
    let blocks: Vec<u64> = seed.iter().map(|r| r.blocks).collect();
    assert_eq!(jobs, [4, 8, 16, 32, 64, 128, 256]);
    assert_eq!(blocks, [512, 256, 128, 64, 32, 16, 8]);
    // 256 KiB blocks: FILESIZE 6 MiB / 8 jobs = 786432 B = 3 blocks.
    assert_eq!(simple_writeback_rounds(2, 3, 256, &[4]), vec![r(4, 8, 3)]);
}

fn metric<'a>(out: &'a RunOutput, key: &str) -> &'a serde_json::Value {
    &out.result.metrics[key]
}

#[test]
fn a_run_ends_after_its_last_round_with_every_file_removed() {
    let s = scenario(&[]).unwrap();
    let (k, out) = run(&s);
    assert!(!out.result.timed_out);
    assert_eq!(metric(&out, "completed"), &serde_json::Value::Bool(true));
    let rounds = metric(&out, "rounds").as_array().unwrap();
    let want = [(1, 4, 128u64 << 20), (2, 8, 64 << 20), (4, 16, 32 << 20)];
    let mut sum_rounds = 0.0;
    for (r, (factor, jobs, bytes)) in rounds.iter().zip(want) {
        assert_eq!(r["cpu_factor"], factor);
        assert_eq!(r["jobs"], jobs);
        assert_eq!(r["jobs_done"], jobs);
        assert_eq!(r["bytes_per_job"], bytes);
        let mean = r["job_elapsed_mean_s"].as_f64().unwrap();
        let took = r["elapsed_s"].as_f64().unwrap();
        assert!(mean > 0.0 && took >= mean, "round {r}");
        assert!(r["job_elapsed_stddev_pct"].as_f64().unwrap() >= 0.0);
        sum_rounds += took;
    }
    assert_eq!(rounds.len(), 3);
    assert_eq!(metric(&out, "jobs"), 28);
    assert_eq!(metric(&out, "bytes"), 3 * (512u64 << 20));
    // The whole test: the rounds, each followed by `sleep 1`; the run ends with it.
    let elapsed = metric(&out, "elapsed_s").as_f64().unwrap();
    assert!(
        elapsed >= sum_rounds + 3.0 - 0.003,
        "{elapsed} < {sum_rounds} + 3"
    );
    assert!(
        (elapsed - out.result.elapsed_s).abs() < 0.001,
        "{elapsed} vs the run's {}",
        out.result.elapsed_s
    );
    // Every file deleted: no page-cache folio of the writers' files is left, the flushers
    // hold no inode, and what was dirtied was written or truncated.
    let first = 1u32 << 24;
    let left = (0..k.mem.pages.nr_pages())
        .filter(|&p| {
            let f = k.mem.pages.fields(p);
            (first..first + 28).contains(&f.owner)
                && f.flags & (pg::ANON | pg::SWAPCACHE | pg::BUDDY | pg::TAIL | pg::SLAB) == 0
        })
        .count();
    assert_eq!(left, 0);
    assert!(k.wb.inodes.is_empty());
    assert!(
        k.wb.truncated > 0,
        "the files' last dirty pages were never written"
    );
    k.check_writeback().unwrap();
    assert_eq!(out.after.stat("nr_dirty"), 0);
}

#[test]
fn a_simple_writeback_run_is_deterministic() {
    let s = scenario(&["workload.cpu_factors=[2, 4]"]).unwrap();
    let (_, a) = run(&s);
    let (_, b) = run(&s);
    assert_eq!(a.result_json, b.result_json);
    assert_eq!(a.vmstat_after, b.vmstat_after);
}

#[test]
fn bad_cpu_factors_name_the_key_and_what_was_expected() {
    let cases: [(&[&str], &[&str]); 4] = [
        (
            &["workload.cpu_factors=[1, 3]"],
            &["workload.cpu_factors", "double", "[1, 3]"],
        ),
        (
            &["workload.cpu_factors=[0, 0]"],
            &["workload.cpu_factors", "at least 1"],
        ),
        (&["workload.jobs=0"], &["workload.jobs", "one file"]),
        (
            &["workload.file_mb=1", "workload.cpu_factors=[1, 2]"],
            &[
                "workload.cpu_factors",
                "factor 2",
                "8 jobs",
                "less than one 1024 KiB block",
            ],
        ),
    ];
    for (sets, wants) in cases {
        let err = scenario(sets)
            .err()
            .unwrap_or_else(|| panic!("{sets:?} accepted"));
        assert!(err.contains(FILE), "{err}");
        for want in wants {
            assert!(err.contains(want), "{want:?} not in {err}");
        }
    }
    // Without cpu_factors, jobs = 0 is still today's writers that never end.
    assert!(scenario(&["workload.cpu_factors=[]", "workload.jobs=0"]).is_ok());
}
