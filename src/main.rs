//! Entry point: parse flags, run the command, print one format on stdout, map errors to
//! exit statuses (2 usage, 1 run time, 130 interrupted). A closed stdout is not an error.

#![forbid(unsafe_code)]

use clap::{CommandFactory, FromArgMatches};
use ioprobe::cli::{Cli, Command, Settings};
use ioprobe::probes::{
    self, Probe, copy::CopyProbe, pipe::PipeProbe, read::ReadProbe, syscalls::Syscalls,
    write::WriteProbe,
};
use ioprobe::report::Format;
use ioprobe::{app, commands, error, report};
use std::io::Write;

fn main() {
    if let Some(code) = ioprobe::trace::overhead::child_main() {
        std::process::exit(code);
    }
    // The matches are kept: cp applies its attribute and symlink options in the order
    // given, as GNU's getopt loop does.
    let matches = match Cli::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => std::process::exit(clap_exit(e)),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => std::process::exit(clap_exit(e)),
    };
    let (settings, ignored) = cli.settings();
    ioprobe::progress::set_quiet(settings.quiet);
    if !ignored.is_empty() {
        ioprobe::progress::note(&format!(
            "{} given before the command: no effect on `ioprobe {}`",
            ignored.join(", "),
            cli.command.name()
        ));
    }
    let code = match execute(&cli, &settings, &matches) {
        Ok(()) => 0,
        Err(e) => {
            let code = error::exit_code(&e);
            let silent = e.chain().any(|c| {
                c.downcast_ref::<error::Exit>()
                    .is_some_and(|x| x.message.is_none())
            });
            if silent {
            } else if code == 130 && !e.chain().any(|c| c.is::<error::Exit>()) {
                eprintln!(
                    "ioprobe: interrupted; {} removed",
                    if matches!(cli.command, Command::Cp(_)) {
                        "unfinished copies"
                    } else {
                        "scratch files"
                    }
                );
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
            eprintln!("ioprobe: error: {}", clap_one_line(&e));
            // GNU cp exits 1 on a usage error, and scripts test for it.
            if is_cp() { 1 } else { 2 }
        }
    }
}

/// Whether the command line runs `ioprobe cp` (its first word that is not an option).
fn is_cp() -> bool {
    std::env::args_os()
        .skip(1)
        .find(|a| !a.to_string_lossy().starts_with('-'))
        .is_some_and(|a| a == "cp")
}

/// clap's message on one line: user values with control characters escaped (a newline
/// in an argument must not break the line), and the parts that help kept: the missing
/// arguments' names and "a similar subcommand exists" tips; the usage block dropped.
fn clap_one_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let mut text = e.render().to_string();
    for kind in [ContextKind::InvalidValue, ContextKind::InvalidArg] {
        if let Some(ContextValue::String(v)) = e.get(kind) {
            text = text.replace(v.as_str(), &ioprobe::units::escape(v));
        }
    }
    let kept: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = one_line(&kept.join(" "));
    let line = line.trim_start_matches("error: ").to_string();
    if line.is_empty() {
        "invalid arguments".into()
    } else {
        line
    }
}

/// An error message on one line: control characters from user input shown escaped,
/// runs of spaces folded.
fn one_line(s: &str) -> String {
    ioprobe::units::escape(s)
        .split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Measures, saves (unless --no-save) and renders. `run` also writes the HTML report and
/// ends its table with where the run and report went; other formats get that on stderr.
fn measure(settings: &Settings, name: &str, list: Vec<Box<dyn Probe>>) -> anyhow::Result<String> {
    measure_run(settings, name, list).map(|m| m.2)
}

/// [`measure`], also returning the run and its saved id.
fn measure_run(
    settings: &Settings,
    name: &str,
    list: Vec<Box<dyn Probe>>,
) -> anyhow::Result<(ioprobe::results::Run, Option<i64>, String)> {
    let mut store = commands::store_for_saving(settings)?;
    let run = app::run_probes(settings, list, name)?;
    let id = commands::save(store.as_mut(), &run)?;
    let mut text = report::render(&run, id, settings.format)?;
    let mut where_to = Vec::new();
    if let (Some(id), Some(store)) = (id, &store) {
        where_to.push(format!("saved as run {id} in {}", store.path().display()));
        if name == "run" {
            let html = commands::write_run_report(store, id, &run)?;
            where_to.push(format!("HTML report: {}", html.display()));
        }
    }
    if settings.format == Format::Table {
        for line in &where_to {
            text.push_str(&format!("{line}\n"));
        }
    } else {
        for line in &where_to {
            ioprobe::progress::note(line);
        }
    }
    // A method whose copy did not match its source: show everything, then fail.
    let failed: Vec<&str> = run
        .measurements
        .iter()
        .filter(|m| m.status == ioprobe::results::Status::Failed)
        .map(|m| m.case.as_str())
        .collect();
    if !failed.is_empty() {
        print_out(&fitted(settings, &text))?;
        anyhow::bail!(
            "{} case(s) FAILED verification (the copy differs from its source): {}",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok((run, id, text))
}

fn execute(cli: &Cli, s: &Settings, matches: &clap::ArgMatches) -> anyhow::Result<()> {
    ioprobe::progress::set_quiet(s.quiet);
    ioprobe::present::grid::set_verbose(s.verbose);
    let terminal = ioprobe::sys::calls::stdout_terminal_width();
    let env = |k: &str| std::env::var(k).ok();
    report::table::set_style(report::table::Style {
        width: if s.wide {
            None
        } else {
            terminal
                .or_else(|| env("COLUMNS").and_then(|c| c.trim().parse().ok()))
                .filter(|&w: &usize| w >= 40)
                .or(Some(report::table::DEFAULT_WIDTH))
        },
        color: cli.color.resolve(
            env("NO_COLOR").as_deref(),
            env("CLICOLOR_FORCE").as_deref(),
            terminal.is_some(),
        ),
    });
    let text = match &cli.command {
        Command::Completions { shell } => {
            let mut out = Vec::new();
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cmd, "ioprobe", &mut out);
            String::from_utf8(out)?
        }
        Command::Manpage => {
            let mut out = Vec::new();
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(&mut out)?;
            String::from_utf8(out)?
        }
        Command::Sysinfo { .. } => {
            let dir = std::fs::canonicalize(&s.dir).ok();
            let env = ioprobe::sys::machine::Environment::collect(dir.as_deref());
            report::render_environment(&env, s.format)?
        }
        Command::Run(_) => measure(s, "run", probes::registry())?,
        Command::Syscalls(a) => measure(
            s,
            "syscalls",
            vec![Box::new(Syscalls::new(a.options(s.scale)))],
        )?,
        Command::Read(a) => measure(
            s,
            "read",
            vec![Box::new(ReadProbe::new(a.options(s.scale)))],
        )?,
        Command::Write(a) => measure(
            s,
            "write",
            vec![Box::new(WriteProbe::new(a.options(s.scale)))],
        )?,
        Command::Copy(a) => measure(
            s,
            "copy",
            vec![Box::new(CopyProbe::new(a.options(s.scale)))],
        )?,
        Command::Pipe(a) => measure(
            s,
            "pipe",
            vec![Box::new(PipeProbe::new(a.options(s.scale)))],
        )?,
        Command::Cp(c) => {
            let opts = c
                .options(s.verbose, matches.subcommand_matches("cp"))
                .map_err(|m| error::Exit::with(1, format!("cp: {m}")))?;
            return error::Exit::status(ioprobe::cp::run(opts)?);
        }
        Command::Trace(t) => {
            let opts = ioprobe::trace::Options {
                command: t.command.clone(),
                output: t.output.clone(),
                json: t.json,
                figures: t.figures.clone(),
            };
            return error::Exit::status(ioprobe::trace::run(&opts, s)?);
        }
        Command::History { .. } => commands::history(s)?,
        Command::Show { run, .. } => commands::show(s, run)?,
        Command::Export { run, format, .. } => commands::export(s, run, format.map(Into::into))?,
        Command::Import { files, .. } => commands::import(s, files)?,
        Command::Report { run, html, svg, .. } => {
            commands::report(s, run, html.as_deref(), svg.as_deref())?
        }
        Command::Advise(_) => {
            let blocks = match commands::advise_from_store(s)? {
                Some(blocks) => blocks,
                None => {
                    ioprobe::progress::note("nothing saved yet; measuring with a quick run first");
                    let (run, id, _) = measure_run(s, "run", probes::registry())?;
                    commands::advice_of_run(&run, id)
                }
            };
            commands::render_advice(&blocks, s.format)?
        }
        Command::Compare {
            a,
            b,
            fail_if_slower,
            ..
        } => {
            let (text, regression) = commands::compare(s, a, b, *fail_if_slower)?;
            let text = fitted(s, &text);
            print_out(&text)?;
            return match regression {
                Some(r) => Err(r.into()),
                None => Ok(()),
            };
        }
    };
    match &cli.command {
        // Scripts, roff and machine formats are never re-wrapped.
        Command::Completions { .. } | Command::Manpage | Command::Export { .. } => print_out(&text),
        _ => print_out(&fitted(s, &text)),
    }
}

/// Table-format output with its prose fitted to the width (see `report::table`).
fn fitted(s: &Settings, text: &str) -> String {
    if s.format == Format::Table {
        report::table::fit_text(text)
    } else {
        text.to_string()
    }
}

/// Writes to stdout; a closed pipe is not an error.
fn print_out(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(anyhow::anyhow!("writing to stdout: {e}")),
    }
}
