//! The reference state machine drawn next to the charts: its modes and transitions, with the
//! transitions a session took highlighted and counted (SVG for report.html, Mermaid for
//! report.md).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::plan_mode::{Mode, Trace};

/// Every mode, in drawing order.
pub const MODES: [Mode; 5] = [
    Mode::Default,
    Mode::AcceptEdits,
    Mode::Plan,
    Mode::Auto,
    Mode::BypassPermissions,
];

/// One edge of the diagram: a pair of modes and what the session did along it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The mode the transition leaves.
    pub from: Mode,
    /// The mode the transition enters.
    pub to: Mode,
    /// What the machine calls this kind of transition when nothing took it.
    pub generic: &'static str,
    /// Kinds of decisions taken along the edge, with their counts (empty when not taken).
    pub taken: Vec<(String, usize)>,
}

impl Edge {
    /// How often the session took this edge.
    pub fn count(&self) -> usize {
        self.taken.iter().map(|(_, n)| n).sum()
    }

    /// The edge's label: the decisions taken with their counts (`reject x2`), or the generic
    /// name when the session never took it.
    pub fn label(&self) -> String {
        if self.taken.is_empty() {
            self.generic.to_string()
        } else {
            self.taken
                .iter()
                .map(|(k, n)| format!("{k} x{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

/// The kind of a transition-making trace event, or None for calls and waits that do not move.
fn kind(event: &str, moved: bool) -> Option<String> {
    let k = if event == "approve enter" {
        "approve enter"
    } else if event == "approve exit" {
        "approve exit"
    } else if event.starts_with("edit") {
        "edit + approve"
    } else if event.starts_with("reject") {
        "reject"
    } else if event.starts_with("decline") {
        "decline"
    } else if event.starts_with("mode") {
        "switch"
    } else if event.starts_with("lead approve") {
        "lead approve"
    } else if event.starts_with("lead reject") {
        "lead reject"
    } else if moved {
        return Some(
            event
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" "),
        );
    } else {
        return None;
    };
    Some(k.to_string())
}

/// The diagram's edges: entering and leaving plan mode from every other mode and the rejection
/// loop (always drawn), plus any other transition the trace took.
pub fn edges(trace: &Trace) -> Vec<Edge> {
    let mut edges: Vec<Edge> = Vec::new();
    for m in MODES.iter().filter(|m| **m != Mode::Plan) {
        edges.push(Edge {
            from: *m,
            to: Mode::Plan,
            generic: "enter",
            taken: Vec::new(),
        });
        edges.push(Edge {
            from: Mode::Plan,
            to: *m,
            generic: "exit",
            taken: Vec::new(),
        });
    }
    edges.push(Edge {
        from: Mode::Plan,
        to: Mode::Plan,
        generic: "reject",
        taken: Vec::new(),
    });
    let mut counts: BTreeMap<(usize, usize, String), usize> = BTreeMap::new();
    let pos = |m: Mode| MODES.iter().position(|x| *x == m).unwrap_or(0);
    for e in trace.entries.iter().filter(|e| e.stream == "main") {
        if let Some(k) = kind(&e.event, e.mode_before != e.mode_after) {
            *counts
                .entry((pos(e.mode_before), pos(e.mode_after), k))
                .or_default() += 1;
        }
    }
    for ((a, b, k), n) in counts {
        let (from, to) = (MODES[a], MODES[b]);
        match edges.iter_mut().find(|e| e.from == from && e.to == to) {
            Some(e) => e.taken.push((k, n)),
            None => edges.push(Edge {
                from,
                to,
                generic: "switch",
                taken: vec![(k, n)],
            }),
        }
    }
    edges
}

/// Modes the session spent time in.
fn visited(trace: &Trace) -> Vec<Mode> {
    let mut v = Vec::new();
    for e in &trace.entries {
        for m in [e.mode_before, e.mode_after] {
            if !v.contains(&m) {
                v.push(m);
            }
        }
    }
    v
}

fn node_pos(m: Mode) -> (f64, f64) {
    match m {
        Mode::Plan => (380.0, 230.0),
        Mode::Default => (110.0, 230.0),
        Mode::AcceptEdits => (380.0, 70.0),
        Mode::Auto => (650.0, 230.0),
        Mode::BypassPermissions => (380.0, 390.0),
    }
}

const HW: f64 = 78.0;
const HH: f64 = 22.0;

/// Where the ray from a node's centre along (dx, dy) leaves its box.
fn clip(dx: f64, dy: f64) -> f64 {
    let tx = if dx.abs() > 1e-9 {
        HW / dx.abs()
    } else {
        f64::MAX
    };
    let ty = if dy.abs() > 1e-9 {
        HH / dy.abs()
    } else {
        f64::MAX
    };
    tx.min(ty)
}

/// Escapes `&`, `<`, `>` and `"` for SVG text and double-quoted attributes.
fn esc(s: &str) -> String {
    html_escape::encode_double_quoted_attribute(s).into_owned()
}

/// The machine as a standalone SVG element (no XML prolog, ready to inline in HTML).
pub fn svg(trace: &Trace) -> String {
    svg_with_ids(trace, "m")
}

/// As [`svg`], with marker ids prefixed by `id` so several diagrams can share one HTML page.
pub fn svg_with_ids(trace: &Trace, id: &str) -> String {
    let edges = edges(trace);
    let seen = visited(trace);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="780" height="450" viewBox="0 0 780 450" font-family="DejaVu Sans, sans-serif" font-size="13">
<defs>
<marker id="{id}-arrow-taken" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="13" markerHeight="13" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#d62728"/></marker>
<marker id="{id}-arrow-idle" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#aaaaaa"/></marker>
</defs>
<rect width="780" height="450" fill="white"/>"##
    );
    for e in &edges {
        svg_edge(&mut s, e, id);
    }
    svg_nodes(&mut s, &seen);
    s.push_str("</svg>\n");
    s
}

/// One transition: a line between its modes (a loop on a mode's corner), red and bold when
/// taken, grey and dashed when not, with its label.
fn svg_edge(s: &mut String, e: &Edge, id: &str) {
    let taken = e.count() > 0;
    let (stroke, width, dash, marker, weight, fill) = if taken {
        ("#d62728", 3.0, "", "taken", "bold", "#d62728")
    } else {
        (
            "#aaaaaa",
            1.5,
            r#" stroke-dasharray="5,4""#,
            "idle",
            "normal",
            "#888888",
        )
    };
    let (ax, ay) = node_pos(e.from);
    let label = esc(&e.label());
    if e.from == e.to {
        // A loop on the node's upper right corner.
        let d = format!(
            "M{:.1},{:.1} C{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}",
            ax + 30.0,
            ay - HH,
            ax + 40.0,
            ay - 95.0,
            ax + 150.0,
            ay - 45.0,
            ax + HW,
            ay - 14.0
        );
        let _ = writeln!(
            s,
            r#"<path d="{d}" fill="none" stroke="{stroke}" stroke-width="{width}"{dash} marker-end="url(#{id}-arrow-{marker})"/>"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" fill="{fill}" font-weight="{weight}">{label}</text>"#,
            ax + 110.0,
            ay - 70.0
        );
        return;
    }
    let (bx, by) = node_pos(e.to);
    let (dx, dy) = (bx - ax, by - ay);
    let len = (dx * dx + dy * dy).sqrt().max(1e-9);
    let (ux, uy) = (dx / len, dy / len);
    // Offset to the right of the direction of travel, so a->b and b->a sit side by side.
    let (nx, ny) = (-uy, ux);
    let off = 9.0;
    let t = clip(ux, uy);
    let (x1, y1) = (ax + ux * t + nx * off, ay + uy * t + ny * off);
    let (x2, y2) = (bx - ux * t + nx * off, by - uy * t + ny * off);
    let _ = writeln!(
        s,
        r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{stroke}" stroke-width="{width}"{dash} marker-end="url(#{id}-arrow-{marker})"/>"#
    );
    let (mx, my) = (
        (x1 + x2) / 2.0 + nx * 16.0,
        (y1 + y2) / 2.0 + ny * 16.0 + 4.0,
    );
    let _ = writeln!(
        s,
        r#"<text x="{mx:.1}" y="{my:.1}" text-anchor="middle" fill="{fill}" font-weight="{weight}">{label}</text>"#
    );
}

/// The modes as boxes, bold where the session went.
fn svg_nodes(s: &mut String, seen: &[Mode]) {
    for m in MODES {
        let (x, y) = node_pos(m);
        let on = seen.contains(&m);
        let (fill, stroke, width) = if on {
            ("#e8f1fa", "#1f77b4", 2.5)
        } else {
            ("#f6f6f6", "#bbbbbb", 1.0)
        };
        let _ = writeln!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="12" fill="{fill}" stroke="{stroke}" stroke-width="{width}"/>"#,
            x - HW,
            y - HH,
            2.0 * HW,
            2.0 * HH
        );
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="15" font-weight="{}">{}</text>"#,
            y + 5.0,
            if on { "bold" } else { "normal" },
            m
        );
    }
}

/// The machine as a Mermaid flowchart; taken transitions are thick and red, with their counts.
pub fn mermaid(trace: &Trace) -> String {
    let edges = edges(trace);
    let mut s = String::from("```mermaid\nflowchart LR\n");
    for m in MODES {
        let _ = writeln!(s, "    {m}([{m}])");
    }
    let mut taken_idx = Vec::new();
    for (i, e) in edges.iter().enumerate() {
        let label = e.label().replace('"', "'");
        if e.count() > 0 {
            let _ = writeln!(s, "    {} ==>|\"{label}\"| {}", e.from, e.to);
            taken_idx.push(i);
        } else {
            let _ = writeln!(s, "    {} -.->|{label}| {}", e.from, e.to);
        }
    }
    for i in taken_idx {
        let _ = writeln!(s, "    linkStyle {i} stroke:#d62728,stroke-width:3px");
    }
    for m in visited(trace) {
        let _ = writeln!(
            s,
            "    style {m} fill:#e8f1fa,stroke:#1f77b4,stroke-width:2px"
        );
    }
    s.push_str("```\n");
    s
}
