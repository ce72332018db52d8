//! Seed 001's devices in whole runs: a RAID-0 of rotating disks takes writeback at several
//! disks' bandwidth, a USB stick (one I/O at a time, slow) at its own; a device without the
//! RAID keys runs as before; bad RAID keys name the file and the key.

use std::ops::ControlFlow;

use reclaim_sim::run::simulate;
use reclaim_sim::{RunOutput, Scenario};

const DD_WRITE: &str = include_str!("../../../scenarios/sim/dd-write.toml");

fn run(sets: &[&str]) -> RunOutput {
    let mut all = vec!["run.duration_s=6".to_string()];
    all.extend(sets.iter().map(|s| s.to_string()));
    let s = Scenario::parse(DD_WRITE, "scenarios/sim/dd-write.toml", &all).expect("scenario");
    simulate(&s, None, &mut |_| ControlFlow::Continue(()))
        .expect("a run to its end")
        .1
}

fn written(out: &RunOutput) -> u64 {
    out.after.stat("nr_written") - out.before.stat("nr_written")
}

const DISK: &str = r#"machine.devices=[{ name = "sd", count = 1, bandwidth_mb_s = 100, latency_us = 100, max_request_kb = 512, seek_us = 8000, rotational = true }]"#;
const RAID4: &str = r#"machine.devices=[{ name = "md", count = 1, bandwidth_mb_s = 100, latency_us = 100, max_request_kb = 512, seek_us = 8000, rotational = true, raid0_disks = 4, stripe_kb = 512 }]"#;
const USB: &str = r#"machine.devices=[{ name = "sdb", count = 1, bandwidth_mb_s = 20, latency_us = 1000, max_request_kb = 120, request_us = 1000, queue_depth = 1, seek_us = 0, rotational = true }]"#;

#[test]
fn a_raid0_writes_back_faster_than_one_of_its_disks_and_a_usb_stick_slower() {
    let disk = written(&run(&[DISK]));
    let raid = written(&run(&[RAID4]));
    let usb = written(&run(&[USB]));
    assert!(raid as f64 > 1.5 * disk as f64, "raid {raid} disk {disk}");
    assert!((usb as f64) < 0.5 * disk as f64, "usb {usb} disk {disk}");
    // A RAID-0 of one disk is that disk.
    let one = written(&run(
        &[&RAID4.replace("raid0_disks = 4", "raid0_disks = 1")],
    ));
    assert_eq!(one, disk);
}

#[test]
fn raid0_runs_repeat() {
    let a = run(&[RAID4]);
    let b = run(&[RAID4]);
    assert_eq!(a.vmstat_after, b.vmstat_after);
    assert_eq!(a.iostat_samples, b.iostat_samples);
}

#[test]
fn a_raid_of_no_disks_names_the_file_and_the_key() {
    let sets = [RAID4.replace("raid0_disks = 4", "raid0_disks = 0")];
    let Err(e) = Scenario::parse(DD_WRITE, "scenarios/sim/dd-write.toml", &sets) else {
        panic!("a RAID of 0 disks must be refused");
    };
    let e = e.to_string();
    assert!(e.contains("scenarios/sim/dd-write.toml"), "{e}");
    assert!(e.contains("machine.devices[0].raid0_disks"), "{e}");
    assert!(e.contains("expected 1 to 64 member disks"), "{e}");
}
