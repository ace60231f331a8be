//! Entry point: parse flags, run the command, print one format on stdout, map errors to
//! exit statuses (2 usage, 1 run time, 130 interrupted). A closed stdout is not an error.

use clap::Parser;
use ioprobe::cli::{Cli, Command};
use ioprobe::probes::{self, Probe, read::ReadProbe, syscalls::Syscalls};
use ioprobe::{app, error, report};
use std::io::Write;

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => std::process::exit(clap_exit(e)),
    };
    let code = match execute(&cli) {
        Ok(()) => 0,
        Err(e) => {
            let code = error::exit_code(&e);
            if code == 130 {
                eprintln!("ioprobe: interrupted; scratch files removed");
            } else {
                eprintln!("ioprobe: error: {}", one_line(&format!("{e:#}")));
            }
            code
        }
    };
    std::process::exit(code);
}

/// Help and version go to stdout with status 0; usage errors become one line, status 2.
fn clap_exit(e: clap::Error) -> i32 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            0
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            2
        }
        _ => {
            let text = e.render().to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            let first = first.trim_start_matches("error: ");
            eprintln!("ioprobe: error: {}", one_line(first));
            2
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn run(
    settings: &ioprobe::cli::Settings,
    name: &str,
    list: Vec<Box<dyn Probe>>,
) -> anyhow::Result<String> {
    let run = app::run_probes(settings, list, name)?;
    report::render(&run, settings.format)
}

fn execute(cli: &Cli) -> anyhow::Result<()> {
    let settings = cli.common.settings();
    let text = match &cli.command {
        Command::Sysinfo => {
            let dir = std::fs::canonicalize(&settings.dir).ok();
            let env = ioprobe::sys::machine::Environment::collect(dir.as_deref());
            report::render_environment(&env, settings.format)?
        }
        Command::Run => run(&settings, "run", probes::registry())?,
        Command::Syscalls(a) => run(
            &settings,
            "syscalls",
            vec![Box::new(Syscalls::new(a.options()))],
        )?,
        Command::Read(a) => run(
            &settings,
            "read",
            vec![Box::new(ReadProbe::new(a.options()))],
        )?,
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(anyhow::anyhow!("writing to stdout: {e}")),
    }
}
