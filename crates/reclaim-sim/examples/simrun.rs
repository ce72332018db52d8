//! Run one scenario from the command line, without Python (for model development and
//! benchmarks): `cargo run --release -p reclaim-sim --example simrun -- SCENARIO
//! [key=value ...] [-o DIR]`. Prints result.json; with `-o`, writes the whole run directory
//! (and trace.txt when the scenario traces).

use std::path::PathBuf;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let out = args.iter().position(|a| a == "-o").map(|i| {
        let dir = args.get(i + 1).cloned().unwrap_or_else(|| usage());
        args.drain(i..=i + 1);
        PathBuf::from(dir)
    });
    let Some(path) = args.first().cloned() else {
        usage()
    };
    let s = match reclaim_sim::Scenario::load_for(
        std::path::Path::new(&path),
        &args[1..],
        reclaim_sim::scenario::Backend::Simulator,
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let trace: Option<Box<dyn std::io::Write>> = match (&out, s.run.trace) {
        (Some(dir), true) => {
            std::fs::create_dir_all(dir).expect("create the run directory");
            let f = std::fs::File::create(dir.join("trace.txt")).expect("create trace.txt");
            Some(Box::new(std::io::BufWriter::new(f)))
        }
        _ => None,
    };
    let t = std::time::Instant::now();
    let run = reclaim_sim::run(&s, trace, &mut |_| {});
    let wall = t.elapsed().as_secs_f64();
    if let Some(dir) = &out {
        if let Err(e) = reclaim_sim::write_run_dir(&run, dir) {
            eprintln!("{}: {e}", dir.display());
            std::process::exit(1);
        }
    }
    println!("{}", run.result_json);
    eprintln!(
        "wall {wall:.2}s, {:.1} M page events/s",
        run.result.model.page_events as f64 / wall / 1e6
    );
}

fn usage() -> ! {
    eprintln!("usage: simrun SCENARIO [key=value ...] [-o DIR]");
    std::process::exit(2);
}
