//! Entry point: parse flags, build settings, run the command once, print one format on
//! stdout, map errors to exit statuses (2 usage, 1 run time; interrupted: killed by the
//! same signal once scratch is removed, 130 without one). A closed stdout is not an error.

#![forbid(unsafe_code)]

use ioprobe::cli::{self, Cli, Command};
use ioprobe::settings::{Format, Scale, Settings};
use ioprobe::{commands, error, probes, report, session};
use std::io::Write;

fn main() {
    // Before any handler is installed: which stop signals the caller left ignored.
    ioprobe::sys::signals::record_start_dispositions();
    if let Some(code) = ioprobe::trace::overhead::child_main() {
        std::process::exit(code);
    }
    // A trace's time, which `--tracer auto` learns from, counts from here.
    ioprobe::trace::start_clock();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // The matches are kept: cp applies its attribute and symlink options in the order
    // given, as GNU's getopt loop does.
    let (matches, cli) =
        cli::parse(&args).unwrap_or_else(|e| std::process::exit(cli::clap_exit(e)));
    let (settings, ignored) = cli.settings();
    ioprobe::progress::set_quiet(settings.quiet);
    ioprobe::progress::set_width(cli::stderr_width(&settings));
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
            let code = failure(&cli.command, &e);
            if e.chain().any(|c| c.is::<error::Interrupted>()) {
                // Scratch and unfinished copies are gone: end as the signal would have.
                let _ = std::io::stderr().flush();
                ioprobe::interrupt::end_by_signal();
            }
            // A traced command killed by a signal: ioprobe ends by the same one.
            let killed = e
                .chain()
                .find_map(|c| c.downcast_ref::<error::Exit>()?.signal);
            if let Some(sig) = killed {
                let _ = (std::io::stdout().flush(), std::io::stderr().flush());
                ioprobe::sys::signals::die_by(sig);
            }
            code
        }
    };
    std::process::exit(code);
}

/// Says why the command failed, on one line (nothing when it already said so), and
/// gives its exit status.
fn failure(command: &Command, e: &anyhow::Error) -> i32 {
    let code = error::exit_code(e);
    let said = e.chain().any(|c| {
        c.downcast_ref::<error::Exit>()
            .is_some_and(|x| x.message.is_none())
    });
    if said {
    } else if code == 130 && !e.chain().any(|c| c.is::<error::Exit>()) {
        let what = if matches!(command, Command::Cp(_)) {
            "unfinished copies"
        } else {
            "scratch files"
        };
        eprintln!("ioprobe: interrupted; {what} removed");
    } else if matches!(command, Command::Cp(_)) {
        // cp's messages read as GNU cp's, with the program's name (docs/cp.md).
        let text = cli::one_line(&format!("{e:#}"));
        eprintln!(
            "ioprobe: cp: {}",
            text.strip_prefix("cp: ").unwrap_or(&text)
        );
    } else {
        eprintln!("ioprobe: error: {}", cli::one_line(&format!("{e:#}")));
    }
    code
}

fn execute(cli: &Cli, s: &Settings, matches: &clap::ArgMatches) -> anyhow::Result<()> {
    if let Some(text) = cli::generated(&cli.command)? {
        // Scripts and roff are never re-wrapped.
        return print_out(&text);
    }
    let text = match &cli.command {
        Command::Run(_) => return measure(s, "run", (probes::registry(), Scale::Run)),
        Command::Probe(p) => {
            return measure(s, p.name(), (vec![p.args().probe(s.scale)], s.scale));
        }
        Command::Sysinfo { .. } => {
            let dir = std::fs::canonicalize(&s.dir).ok();
            let env = ioprobe::sys::machine::Environment::collect(dir.as_deref());
            report::render_environment(&env, s.format, &s.style)?
        }
        Command::Cp(c) => {
            let opts = c
                .options(s.verbose, matches.subcommand_matches("cp"))
                .map_err(|m| error::Exit::with(1, format!("cp: {m}")))?;
            return error::Exit::status(ioprobe::cp::run(opts)?);
        }
        Command::Trace(t) => return error::Exit::status(ioprobe::trace::run(&t.options(), s)?),
        Command::History { .. } => commands::history::history(s)?,
        Command::Show { run, .. } => commands::show::show(s, run)?,
        Command::Export {
            run,
            format,
            to_file,
            ..
        } => {
            // A machine format is printed (or written) as it is.
            let text = commands::export::export(s, run, format.map(Into::into))?;
            return match to_file {
                Some(path) => commands::export::write_to(s, path, &text),
                None => print_out(&text),
            };
        }
        Command::Import { files, .. } => commands::import::import(s, files)?,
        Command::Report { run, html, svg, .. } => {
            commands::report::report(s, run, html.as_deref(), svg.as_deref())?
        }
        Command::Advise(_) => commands::advise::advise(s)?,
        Command::Compare {
            a,
            b,
            fail_if_slower,
            ..
        } => {
            let (text, regression) = commands::compare::compare(s, a, b, *fail_if_slower)?;
            print_out(&fitted(s, &text))?;
            return regression.map_or(Ok(()), |r| Err(r.into()));
        }
        Command::Completions { .. } | Command::Manpage => String::new(),
    };
    print_out(&fitted(s, &text))
}

/// A measuring command: its run printed; a method whose copy did not match its source
/// fails the command once everything is shown.
fn measure(
    s: &Settings,
    name: &str,
    list: (Vec<Box<dyn probes::Probe>>, Scale),
) -> anyhow::Result<()> {
    let m = session::measure(s, name, list, name == "run")?;
    print_out(&fitted(s, &m.text))?;
    m.failure().map_or(Ok(()), Err)
}

/// Table-format output with its prose fitted to the width (see `report::table`).
fn fitted(s: &Settings, text: &str) -> String {
    if s.format == Format::Table {
        report::table::fit_text(text, &s.style)
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
