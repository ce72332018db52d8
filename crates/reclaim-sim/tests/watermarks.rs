//! Watermarks against the kernel: this machine's /proc/zoneinfo printed min/low/high and the
//! lowmem reserves ("protection") from its managed pages, min_free_kbytes and
//! watermark_scale_factor; the model's formulas must give the same numbers.

use reclaim_sim::mm::zone::*;

struct ZoneInfo {
    node: u32,
    zone_idx: usize,
    managed: u64,
    min: u64,
    low: u64,
    high: u64,
    boost: u64,
    protection: Vec<u64>,
}

fn parse_zoneinfo(text: &str) -> Vec<ZoneInfo> {
    let mut zones = Vec::new();
    let mut cur: Option<ZoneInfo> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Node ") {
            if let Some(z) = cur.take() {
                zones.push(z);
            }
            let node: u32 = rest.split(',').next().unwrap().trim().parse().unwrap();
            let name = rest.rsplit("zone").next().unwrap().trim();
            let zone_idx = match name {
                "DMA" => ZONE_DMA,
                "DMA32" => ZONE_DMA32,
                "Normal" => ZONE_NORMAL,
                "Movable" => ZONE_MOVABLE,
                _ => continue, // Device, HighMem: not modelled
            };
            cur = Some(ZoneInfo {
                node,
                zone_idx,
                managed: 0,
                min: 0,
                low: 0,
                high: 0,
                boost: 0,
                protection: vec![],
            });
            continue;
        }
        let Some(z) = cur.as_mut() else { continue };
        let mut it = line.split_whitespace();
        match (it.next(), it.next()) {
            (Some("min"), Some(v)) => z.min = v.parse().unwrap(),
            (Some("low"), Some(v)) => z.low = v.parse().unwrap(),
            (Some("high"), Some(v)) => z.high = v.parse().unwrap(),
            (Some("boost"), Some(v)) => z.boost = v.parse().unwrap(),
            (Some("managed"), Some(v)) => z.managed = v.parse().unwrap(),
            (Some("protection:"), _) => {
                let inner = line.split('(').nth(1).unwrap().trim_end_matches(')');
                z.protection = inner
                    .split(',')
                    .map(|x| x.trim().parse().unwrap())
                    .collect();
            }
            _ => {}
        }
    }
    zones.extend(cur);
    zones
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

#[test]
fn this_machines_zoneinfo_matches_the_formulas() {
    let (Some(zoneinfo), Some(mfk), Some(wsf)) = (
        read("/proc/zoneinfo"),
        read("/proc/sys/vm/min_free_kbytes"),
        read("/proc/sys/vm/watermark_scale_factor"),
    ) else {
        eprintln!("skipped: no /proc/zoneinfo here");
        return;
    };
    let info = parse_zoneinfo(&zoneinfo);
    assert!(!info.is_empty(), "no zones parsed");
    let no_pages = reclaim_sim::mm::page::Pages::new(0, NR_FREE_LISTS as u32);
    let mut zones: Vec<Zone> = info
        .iter()
        .map(|z| Zone::new(z.zone_idx, z.node, 0, z.managed, free_lists(&no_pages, 0)))
        .collect();
    setup_per_zone_wmarks(
        &mut zones,
        mfk.trim().parse().unwrap(),
        wsf.trim().parse().unwrap(),
    );
    let mut checked = 0;
    for (z, k) in zones.iter().zip(&info) {
        if k.boost != 0 {
            continue; // a boosted zone prints boost-inflated marks
        }
        assert_eq!(
            (
                z.watermark[WMARK_MIN],
                z.watermark[WMARK_LOW],
                z.watermark[WMARK_HIGH]
            ),
            (k.min, k.low, k.high),
            "node {} zone {}",
            k.node,
            ZONE_NAMES[k.zone_idx]
        );
        checked += 1;
    }
    assert!(checked > 0);
    // lowmem_reserve, node by node.
    let nodes: std::collections::BTreeSet<u32> = info.iter().map(|z| z.node).collect();
    for node in nodes {
        let mut managed = [0u64; MAX_NR_ZONES];
        for z in info.iter().filter(|z| z.node == node) {
            managed[z.zone_idx] = z.managed;
        }
        let reserve = setup_per_zone_lowmem_reserve(&managed);
        for z in info.iter().filter(|z| z.node == node) {
            for (j, (&ours, &theirs)) in reserve[z.zone_idx].iter().zip(&z.protection).enumerate() {
                assert_eq!(
                    ours, theirs,
                    "node {node} zone {} protection[{j}]",
                    ZONE_NAMES[z.zone_idx]
                );
            }
        }
    }
}

#[test]
fn zoneinfo_parser_reads_a_known_sample() {
    let sample = "Node 0, zone    DMA32\n  pages free     757396\n        boost    0\n        min      2116\n        low      2888\n        high     3660\n        managed  772918\n        protection: (0, 0, 21071, 21071, 21071)\n";
    let z = &parse_zoneinfo(sample)[0];
    assert_eq!(
        (z.zone_idx, z.min, z.low, z.high, z.managed),
        (ZONE_DMA32, 2116, 2888, 3660, 772918)
    );
    assert_eq!(z.protection, vec![0, 0, 21071, 21071, 21071]);
}
