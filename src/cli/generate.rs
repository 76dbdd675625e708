//! `plancache generate`: write synthetic plan sessions from parameters and a seed.

use std::path::PathBuf;

use clap::Args;

use super::CliError;
use plancache::export::{write_atomic, OutputDir};
use plancache::scenario::{generate, load_str, to_toml, GeneratorParams};

/// Write a synthetic plan-mode session (a scenario file) drawn from parameters and a seed.
/// The same parameters and seed always give the same bytes.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache generate --seed 7                              # print one scenario
  plancache generate --seed 7 --exploration-rounds 30 --rejections 2 --out long.toml
  plancache generate --params sweep.toml --count 20 --out generated/   # seeds 7..26 with --seed 7
  plancache generate --print-params                        # the defaults, as a params file

A params file is TOML with any fields of `plancache generate --print-params`; flags override it.
Exit codes: 0 written, 2 bad parameters or unwritable output.")]
pub struct GenerateArgs {
    /// Parameters file (TOML); fields not given keep their defaults.
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Seed of the random draws.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Exploration requests in plan mode.
    #[arg(long)]
    pub exploration_rounds: Option<u32>,
    /// Smallest and largest exploration result, e.g. `200..4000`.
    #[arg(long, value_parser = parse_range)]
    pub result_tokens: Option<(u32, u32)>,
    /// Total tokens of all tool definitions.
    #[arg(long)]
    pub tool_tokens: Option<u32>,
    /// Number of tool definitions.
    #[arg(long)]
    pub tools: Option<u32>,
    /// Rejections before approval.
    #[arg(long)]
    pub rejections: Option<u32>,
    /// Time the user reads the plan (`"7m"`).
    #[arg(long)]
    pub review_wait: Option<String>,
    /// Implementation requests after approval.
    #[arg(long)]
    pub implementation_turns: Option<u32>,
    /// Explore subagents launched during exploration.
    #[arg(long)]
    pub subagents: Option<u32>,
    /// The model calls EnterPlanMode itself.
    #[arg(long)]
    pub model_initiated: bool,
    /// Write this many scenarios with consecutive seeds into the --out directory.
    #[arg(long, default_value_t = 1)]
    pub count: u32,
    /// Output file (one scenario) or directory (with --count); default: standard output.
    #[arg(long, value_name = "FILE|DIR")]
    pub out: Option<PathBuf>,
    /// Print the effective parameters as TOML and exit.
    #[arg(long)]
    pub print_params: bool,
    /// Keep scenarios whose requests exceed the model's context window (refused by default).
    #[arg(long)]
    pub allow_over_context: bool,
}

fn parse_range(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}`: write MIN..MAX, e.g. 200..4000"))?;
    let n = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|e| format!("`{x}` in `{s}`: {e}"))
    };
    Ok((n(a)?, n(b)?))
}

fn params(args: &GenerateArgs) -> Result<GeneratorParams, CliError> {
    let mut p = match &args.params {
        Some(path) => {
            let text = plancache::budget::read_text(path, "parameters file")
                .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
            toml::from_str::<GeneratorParams>(&text).map_err(|e| {
                CliError::input(format!(
                    "{}: {}\n  hint: `plancache generate --print-params` shows every field",
                    path.display(),
                    e.to_string().trim_end()
                ))
            })?
        }
        None => GeneratorParams::default(),
    };
    if let Some(v) = args.seed {
        p.seed = v;
    }
    if let Some(v) = args.exploration_rounds {
        p.exploration_rounds = v;
    }
    if let Some((min, max)) = args.result_tokens {
        p.result_tokens = plancache::scenario::TokenRange::new(min, max);
    }
    if let Some(v) = args.tool_tokens {
        p.tool_tokens = v;
    }
    if let Some(v) = args.tools {
        p.tools = v;
    }
    if let Some(v) = args.rejections {
        p.rejections = v;
    }
    if let Some(v) = &args.review_wait {
        p.review_wait = v.clone();
    }
    if let Some(v) = args.implementation_turns {
        p.implementation_turns = v;
    }
    if let Some(v) = args.subagents {
        p.subagents = v;
    }
    if args.model_initiated {
        p.model_initiated = true;
    }
    p.validate()
        .map_err(|e| CliError::input(format!("invalid generator parameters: {e}")))?;
    Ok(p)
}

/// The scenario file for `p`: a header naming the generator and its parameters, then the TOML.
pub fn render(p: &GeneratorParams) -> Result<String, CliError> {
    let scenario = generate(p);
    let body = to_toml(&scenario).map_err(CliError::failed)?;
    // The output must read back as a valid scenario: a failure here is a bug, not bad input.
    load_str(&body, std::path::Path::new("<generated>"))
        .map_err(|e| CliError::failed(format!("generated scenario does not load: {e}")))?;
    let params = toml::to_string(p).map_err(|e| CliError::failed(e.to_string()))?;
    let mut out = String::from("# Generated by `plancache generate`; parameters:\n");
    for line in params.lines() {
        out.push_str("#   ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&body);
    Ok(out)
}

pub fn run(args: GenerateArgs) -> Result<(), CliError> {
    let p = params(&args)?;
    if let Some(out) = args.out.as_deref().filter(|_| args.count > 1) {
        if !out.is_dir() && out.extension().is_some_and(|e| e == "toml") {
            return Err(CliError::input(format!(
                "--out {}: --count above 1 writes one file per seed into a directory, and this looks like a file name\n  hint: e.g. --out generated/",
                out.display()
            )));
        }
        super::common::check_out_dir(out, "--count above 1 writes one file per seed")?;
    }
    if let Some(out) = args
        .out
        .as_deref()
        .filter(|o| args.count <= 1 && !o.is_dir())
    {
        super::common::check_file_out(
            "--out",
            out,
            &args.params.iter().cloned().collect::<Vec<_>>(),
        )?;
    }
    let render = |p: &GeneratorParams| -> Result<String, CliError> {
        let text = render(p)?;
        if !args.allow_over_context {
            super::common::refuse_over_context(
                &text,
                &format!("generated scenario (seed {})", p.seed),
            )?;
        }
        Ok(text)
    };
    if args.print_params {
        print!(
            "{}",
            toml::to_string(&p).map_err(|e| CliError::failed(e.to_string()))?
        );
        return Ok(());
    }
    if args.count == 0 {
        return Err(CliError::input("--count must be at least 1"));
    }
    if args.count == 1 {
        let text = render(&p)?;
        match &args.out {
            Some(path) if !path.is_dir() => {
                write_atomic(path, text.as_bytes()).map_err(CliError::input)?
            }
            Some(dir) => {
                let path = dir.join(format!("generated-{}.toml", p.seed));
                write_atomic(&path, text.as_bytes()).map_err(CliError::input)?
            }
            None => print!("{text}"),
        }
        return Ok(());
    }
    let Some(dir) = &args.out else {
        return Err(CliError::input(
            "--count above 1 needs --out DIR\n  hint: e.g. plancache generate --count 20 --out generated/",
        ));
    };
    // One transaction: an interrupted run leaves the previous set, a complete one replaces it
    // (files of an earlier, larger --count included).
    let out = OutputDir::begin(dir, "generate").map_err(CliError::input)?;
    for k in 0..u64::from(args.count) {
        plancache::export::check_interrupted()?;
        let mut q = p.clone();
        q.seed = p.seed.wrapping_add(k);
        let path = out.path().join(format!("generated-{}.toml", q.seed));
        write_atomic(&path, render(&q)?.as_bytes()).map_err(CliError::input)?;
    }
    out.commit().map_err(CliError::input)?;
    eprintln!("wrote {} scenarios to {}", args.count, dir.display());
    Ok(())
}
