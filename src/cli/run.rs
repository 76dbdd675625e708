//! `plancache run`: replay scenarios and compare strategies.

use super::common::PricingArgs;
use std::path::PathBuf;

use clap::Args;

use super::common::{
    cache_list, check_equivalence, check_outputs, context_overruns, load_and_replay_with,
    noop_notes, strategies, Output, OutputKind, Sink,
};
use super::params::ParamArgs;
use super::{output, CliError};
use plancache::export::{self, Exporter, Format};

/// Replay scenarios under each strategy and cache model and print a comparison table.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache run                                   # every scenario in ./scenarios
  plancache run scenarios/exercise-3.toml --out out
  plancache run scenarios/auth-plan.toml --json | jq '.summary[0].hit_rate'
  plancache run scenarios --export-csv summary.csv --export-markdown -   # files and stdout at once
  plancache run my.toml --price input=2,output=8  # a model the bundled table does not know
  plancache run my.toml --model claude-opus-4-6 --ttl 5m --set 'steps[5].wait.duration=20m'

Machine output: --json prints run.json on standard output instead of the table; --export-json,
--export-csv and --export-markdown write run.json, summary.csv and summary.md to a file each
(any number at once; `-` is standard output). --out DIR writes the bundle (requests.csv,
summary.csv and the --format file). --format without --out prints that format on standard output.")]
pub struct RunArgs {
    /// Scenario files or directories (default: ./scenarios).
    pub scenarios: Vec<PathBuf>,
    /// Strategies, comma-separated, or `all`.
    #[arg(long, default_value = "all")]
    pub strategy: String,
    /// Cache models, comma-separated, or `all`.
    #[arg(long, default_value = plancache::cache::DEFAULT_CACHE)]
    pub cache: String,
    /// Write requests.csv and summary.csv (and the --format file) into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Extra format written next to the CSVs with --out; without --out, printed instead of
    /// the table (csv prints summary.csv).
    #[arg(long, value_parser = super::values::parser::<super::values::Format, Format>())]
    pub format: Option<Format>,
    /// Print run.json on standard output instead of the table.
    #[arg(long, short = 'j')]
    pub json: bool,
    /// Write run.json (summaries, requests, traces) to FILE (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write summary.csv to FILE (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Write the summary as a Markdown table to FILE (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    // The price table: `--pricing FILE` and `--price SPEC`.
    #[command(flatten)]
    pub pricing: PricingArgs,
    /// A TOML file of cache-model parameters (one table per model, e.g. [anthropic]
    /// message_ttl = "5m"); see docs/cache-models.md.
    #[arg(long, value_name = "FILE")]
    pub cache_config: Option<PathBuf>,
    /// Parameters on the scenario files (--model, --ttl, --keepalive, --set).
    #[command(flatten)]
    pub params: ParamArgs,
    /// The strategy the table's "× cost" and "Δ hit rate" columns and the verdicts compare
    /// against (default: the first strategy run; `as-sent`, the log as sent, when a raw API
    /// request log is given).
    #[arg(long, value_name = "STRATEGY")]
    pub reference: Option<String>,
}

/// The file outputs a command line asks for, checked before any work.
pub(super) struct Outputs {
    pub sinks: Vec<(Sink, Box<dyn Exporter>)>,
}

impl Outputs {
    pub fn to_stdout(&self) -> bool {
        self.sinks.iter().any(|(s, _)| *s == Sink::Stdout)
    }
}

fn exporter(format: Format) -> Box<dyn Exporter> {
    match format {
        Format::Csv => Box::new(export::SummaryCsv),
        Format::Json => Box::new(export::JsonExporter),
        Format::Markdown => Box::new(export::MarkdownExporter),
    }
}

fn outputs(args: &RunArgs) -> Result<Outputs, CliError> {
    let mut sinks: Vec<(Sink, Box<dyn Exporter>)> = Vec::new();
    let mut stdout_flags = Vec::new();
    let mut add = |flag: &str, sink: Sink, format: Format| {
        if sink == Sink::Stdout {
            stdout_flags.push(flag.to_string());
        }
        sinks.push((sink, exporter(format)));
    };
    if args.json {
        add("--json", Sink::Stdout, Format::Json);
    }
    if args.out.is_none() {
        if let Some(f) = args.format {
            add("--format", Sink::Stdout, f);
        }
    }
    for (flag, path, format) in [
        ("--export-json", &args.export_json, Format::Json),
        ("--export-csv", &args.export_csv, Format::Csv),
        ("--export-markdown", &args.export_markdown, Format::Markdown),
    ] {
        if let Some(p) = path {
            add(flag, Sink::parse(flag, p)?, format);
        }
    }
    if stdout_flags.len() > 1 {
        return Err(CliError::input(format!(
            "{} each write to standard output; only one can\n  hint: send the others to files, e.g. --export-csv summary.csv",
            stdout_flags.join(" and ")
        )));
    }
    // The files `--out D` writes, so an export naming one of them (`--export-csv
    // D/summary.csv`) is refused before work instead of written twice.
    let bundle: Vec<PathBuf> = args.out.as_ref().map_or_else(Vec::new, |dir| {
        export::exporters(args.format.unwrap_or(Format::Csv))
            .iter()
            .map(|e| dir.join(e.file_name()))
            .collect()
    });
    let mut all: Vec<Output<'_>> = [
        ("--export-json", &args.export_json),
        ("--export-csv", &args.export_csv),
        ("--export-markdown", &args.export_markdown),
    ]
    .into_iter()
    .filter_map(|(flag, p)| {
        p.as_deref().map(|path| Output {
            flag,
            path,
            kind: OutputKind::File,
        })
    })
    .collect();
    if let Some(dir) = &args.out {
        all.push(Output {
            flag: "--out",
            path: dir,
            kind: OutputKind::Dir,
        });
    }
    all.extend(bundle.iter().map(|path| Output {
        flag: "--out",
        path,
        kind: OutputKind::File,
    }));
    check_outputs(
        &all,
        &run_inputs(args),
        "for standard output use --json, or --export-csv - / --export-markdown -",
    )?;
    Ok(Outputs { sinks })
}

/// Every file `run` reads, for the output check.
fn run_inputs(args: &RunArgs) -> Vec<PathBuf> {
    let mut v = super::common::scenario_paths(&args.scenarios).unwrap_or_default();
    v.extend(args.pricing.file.iter().chain(&args.cache_config).cloned());
    v
}

pub fn run(args: RunArgs) -> Result<(), CliError> {
    let strategies = strategies(&args.strategy)?;
    let caches = cache_list(&args.cache)?;
    let outs = outputs(&args)?;
    let names: Vec<&str> = strategies.iter().map(|s| s.name()).collect();
    // A raw request log brings the log as sent, the default reference.
    let logs = !super::logs::logs(&args.scenarios).is_empty();
    let designs: Vec<&str> = logs
        .then_some(plancache::requests::as_sent::AS_SENT)
        .into_iter()
        .chain(names.iter().copied())
        .collect();
    let reference = reference(args.reference.as_deref(), &designs)?;
    let mut env = plancache::engine::ReplayEnv {
        prices: args.pricing.table()?,
        caches: super::common::cache_config(args.cache_config.as_deref())?,
        ..plancache::engine::ReplayEnv::default()
    };
    args.params.apply_env(&mut env);
    let (sessions, mut report) = load_and_replay_with(
        &args.scenarios,
        &args.params.overrides(),
        &strategies,
        &caches,
        &env,
    )?;
    super::logs::add_as_sent(&args.scenarios, &sessions, &caches, &env, &mut report)?;
    for w in context_overruns(&report, &env.prices) {
        output::warn(&w);
    }
    let mut noted = std::collections::BTreeSet::new();
    for s in &sessions {
        for n in noop_notes(&s.scenario, Some(&names), Some(&caches)) {
            if noted.insert(n.clone()) {
                output::stderr_line(output::NOTE, "note", &n);
            }
        }
    }
    // Render everything before writing anything: a failing format leaves no partial output.
    let rendered = outs
        .sinks
        .iter()
        .map(|(sink, e)| Ok((sink, e.render(&report).map_err(CliError::input)?)))
        .collect::<Result<Vec<_>, CliError>>()?;
    if !outs.to_stdout() {
        output::stdout_text(&table_text(&report, reference))?;
    }
    for (sink, bytes) in rendered {
        sink.write(&bytes)?;
        if let Sink::File(p) = sink {
            eprintln!("wrote {}", p.display());
        }
    }
    if let Some(dir) = &args.out {
        let format = args.format.unwrap_or(Format::Csv);
        export::write_all(dir, &report, &export::exporters(format)).map_err(CliError::input)?;
        eprintln!("wrote {}", dir.display());
    }
    check_equivalence(&report)
}

/// The `--reference` strategy: one of those run (default: the first); none when only one runs.
fn reference<'a>(given: Option<&'a str>, names: &[&'a str]) -> Result<Option<&'a str>, CliError> {
    match given {
        Some(r) if names.contains(&r) => Ok(Some(r)),
        Some(r) => Err(CliError::input(format!(
            "--reference {r}: not one of the strategies run ({}){}\n  hint: name one of them, or add it to --strategy",
            names.join(", "),
            plancache::cache::pricing::did_you_mean(r, names.iter().copied())
        ))),
        None if names.len() > 1 => Ok(names.first().copied()),
        None => Ok(None),
    }
}

/// The comparison table with a bold header line; with several strategies, the columns relative
/// to the reference and one verdict per scenario after it.
fn table_text(report: &plancache::engine::RunReport, reference: Option<&str>) -> String {
    let rows = report.summaries();
    let table = match reference {
        Some(r) => {
            let mut headers = export::reference::HEADERS.to_vec();
            let mut cells = export::reference::cells(&rows, r);
            // Against the log as sent, also what each design saves in dollars.
            if r == plancache::requests::as_sent::AS_SENT {
                headers.push("saving $");
                for (c, s) in cells.iter_mut().zip(export::reference::savings(&rows, r)) {
                    c.push(s);
                }
            }
            let mut t = export::render_table_with(&rows, &headers, &cells);
            let verdicts = export::reference::verdicts(&rows, r);
            if !verdicts.is_empty() {
                t.push('\n');
                for v in verdicts {
                    t.push_str(&v);
                    t.push('\n');
                }
            }
            t
        }
        None => export::render_table(&rows),
    };
    match table.split_once('\n') {
        Some((header, rest)) => format!("{}\n{rest}", output::paint(output::HEADER, header)),
        None => table,
    }
}
