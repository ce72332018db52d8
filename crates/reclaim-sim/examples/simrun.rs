//! Run one scenario from the command line and print its result (for model development):
//! `cargo run --release -p reclaim-sim --example simrun -- SCENARIO [key=value ...]`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: simrun SCENARIO [key=value ...]");
        std::process::exit(2);
    };
    let s = match reclaim_sim::Scenario::load(std::path::Path::new(path), &args[1..]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let t = std::time::Instant::now();
    let out = reclaim_sim::run(&s, None, &mut |_| {});
    let wall = t.elapsed().as_secs_f64();
    println!("{}", out.result_json);
    eprintln!(
        "wall {wall:.2}s, {:.1} M page events/s",
        out.result.page_events as f64 / wall / 1e6
    );
}
