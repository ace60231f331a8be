//! Human-readable tables (comfy-table) for stdout.

use super::grid::{Grid, environment_grid, probe_grids, run_header};
use crate::advice::Recommendation;
use crate::present::Style;
use crate::results::Run;
pub use crate::units::visible_len;
use crate::units::wrap;
use comfy_table::{
    Attribute, Cell, CellAlignment, Color, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED,
};

/// `header` on two lines when it is wider than its column's cells and a space lets
/// the wider half be narrower than the whole.
fn split_header(header: &str, content: usize) -> String {
    let len = header.chars().count();
    if len <= content {
        return header.to_string();
    }
    let best = header
        .char_indices()
        .filter(|&(_, c)| c == ' ')
        .map(|(i, _)| {
            (
                i,
                header[..i]
                    .chars()
                    .count()
                    .max(len - header[..i].chars().count() - 1),
            )
        })
        .min_by_key(|&(_, w)| w);
    match best {
        Some((i, w)) if w < len => format!("{}\n{}", &header[..i], &header[i + 1..]),
        _ => header.to_string(),
    }
}

/// The table of `g` with the columns `keep`, styled when `color`, headers wider than
/// their cells on two lines when `split`, cells wrapped to `width` when given.
fn build(g: &Grid, keep: &[usize], color: bool, split: bool, width: Option<usize>) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED).force_no_tty();
    if color {
        t.enforce_styling();
    }
    match width {
        Some(w) => t
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(u16::try_from(w).unwrap_or(u16::MAX)),
        None => t.set_content_arrangement(ContentArrangement::Disabled),
    };
    let cell = |r: &Vec<String>, c: usize| r.get(c).cloned().unwrap_or_default();
    t.set_header(keep.iter().map(|&c| {
        let content = g
            .rows
            .iter()
            .map(|r| cell(r, c).chars().count())
            .max()
            .unwrap_or(0);
        Cell::new(if split {
            split_header(&g.headers[c], content.max(4))
        } else {
            g.headers[c].clone()
        })
    }));
    for (i, r) in g.rows.iter().enumerate() {
        let best = color && g.best_row == Some(i);
        t.add_row(keep.iter().map(|&c| {
            let cell = Cell::new(cell(r, c));
            if best {
                cell.fg(Color::Green).add_attribute(Attribute::Bold)
            } else {
                cell
            }
        }));
    }
    match (
        width,
        g.flex.and_then(|f| keep.iter().position(|&c| c == f)),
    ) {
        (Some(w), Some(flex)) => {
            let widths = flex_widths(g, keep, flex, w);
            for (i, cw) in widths.into_iter().enumerate() {
                if let Some(col) = t.column_mut(i) {
                    // comfy-table's width includes the cell's two spaces of padding.
                    let cw = u16::try_from(cw + 2).unwrap_or(u16::MAX);
                    col.set_constraint(comfy_table::ColumnConstraint::Absolute(
                        comfy_table::Width::Fixed(cw),
                    ));
                }
            }
        }
        (Some(_), None) => {
            // Cells wrap, but never the first column's names.
            if let Some(col) = t.column_mut(0) {
                col.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
            }
        }
        _ => {}
    }
    for (i, &c) in keep.iter().enumerate() {
        if let Some(col) = t.column_mut(i).filter(|_| g.right_aligned(c)) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// Content widths of the kept columns for a table `width` wide, the column at `flex`
/// taking what the others leave. The widths whose tallest row is lowest win, then those
/// printing the fewest lines, then the widest flexible column: where the other
/// columns' widths (each from its longest word to its content) make few combinations
/// every one is tried; otherwise every width of the flexible column is, the others
/// shrinking widest first to make room.
fn flex_widths(g: &Grid, keep: &[usize], flex: usize, width: usize) -> Vec<usize> {
    let cells = |c: usize| {
        g.rows
            .iter()
            .map(move |r| r.get(c).map_or("", String::as_str))
            .chain([g.headers[c].as_str()])
    };
    let longest_word = |s: &str| s.split(' ').map(visible_len).max().unwrap_or(0);
    let natural: Vec<usize> = keep
        .iter()
        .map(|&c| cells(c).map(visible_len).max().unwrap_or(0))
        .collect();
    let floor: Vec<usize> = keep
        .iter()
        .map(|&c| cells(c).map(longest_word).max().unwrap_or(0).max(4))
        .collect();
    // "│ a ┆ b │": one separator and two spaces of padding per column, one border.
    let avail = width.saturating_sub(3 * keep.len() + 1);
    let layout = Layout {
        g,
        keep,
        flex,
        avail,
    };
    let tries = layout.combinations(&floor, &natural);
    // Tallest row, lines, then the flexible column widest.
    type Key = (usize, usize, std::cmp::Reverse<usize>);
    let mut best: Option<(Key, Vec<usize>)> = None;
    let mut consider = |w: Vec<usize>| {
        if layout.others(&w) + w[flex] > avail {
            return;
        }
        let (tallest, total) = layout.cost(&w);
        let key = (tallest, total, std::cmp::Reverse(w[flex]));
        if best.as_ref().is_none_or(|(b, _)| key < *b) {
            best = Some((key, w));
        }
    };
    if tries <= 20_000 {
        layout.each_combination(&floor, &natural, &mut consider);
    }
    for fw in floor[flex]..=natural[flex].max(floor[flex]) {
        consider(layout.shrunk(&floor, &natural, fw));
    }
    // Too wide even at the floors: the narrowest columns.
    best.map_or_else(|| layout.shrunk(&floor, &natural, floor[flex]), |b| b.1)
}

/// A grid's kept columns being fitted to `avail` characters of content.
struct Layout<'a> {
    g: &'a Grid,
    keep: &'a [usize],
    flex: usize,
    avail: usize,
}

impl Layout<'_> {
    /// The tallest row's lines and all rows' lines at widths `w`.
    fn cost(&self, w: &[usize]) -> (usize, usize) {
        let rows = self.g.rows.iter().map(|r| {
            self.keep
                .iter()
                .zip(w)
                .map(|(&c, &cw)| wrapped_lines(r.get(c).map_or("", String::as_str), cw))
                .max()
                .unwrap_or(1)
        });
        rows.fold((0, 0), |(m, t), n| (m.max(n), t + n))
    }

    /// The widths of the columns other than the flexible one, summed.
    fn others(&self, w: &[usize]) -> usize {
        (0..w.len()).filter(|&i| i != self.flex).map(|i| w[i]).sum()
    }

    /// The natural widths with the flexible column at `fw`, the others shrunk widest
    /// first (never below their floor) until they fit.
    fn shrunk(&self, floor: &[usize], natural: &[usize], fw: usize) -> Vec<usize> {
        let mut w = natural.to_vec();
        w[self.flex] = fw;
        while self.others(&w) + fw > self.avail {
            let Some(i) = (0..w.len())
                .filter(|&i| i != self.flex && w[i] > floor[i])
                .max_by_key(|&i| w[i])
            else {
                break;
            };
            w[i] -= 1;
        }
        w
    }

    /// How many combinations of the other columns' widths there are.
    fn combinations(&self, floor: &[usize], natural: &[usize]) -> usize {
        (0..floor.len())
            .filter(|&i| i != self.flex)
            .map(|i| natural[i].saturating_sub(floor[i]) + 1)
            .fold(1usize, |a, n| a.saturating_mul(n))
    }

    /// Every combination of the other columns' widths, the flexible column taking what
    /// they leave (up to its content).
    fn each_combination(&self, floor: &[usize], natural: &[usize], f: &mut dyn FnMut(Vec<usize>)) {
        let mut w: Vec<usize> = floor.iter().zip(natural).map(|(&f, &n)| f.min(n)).collect();
        loop {
            let room = self.avail.saturating_sub(self.others(&w));
            if room >= floor[self.flex] {
                let mut t = w.clone();
                t[self.flex] = room.min(natural[self.flex].max(floor[self.flex]));
                f(t);
            }
            // The next combination, as an odometer over the other columns.
            let mut i = 0;
            loop {
                if i == w.len() {
                    return;
                }
                if i != self.flex && w[i] < natural[i] {
                    w[i] += 1;
                    break;
                }
                if i != self.flex {
                    w[i] = floor[i].min(natural[i]);
                }
                i += 1;
            }
        }
    }
}

/// Lines `text` takes when its words are wrapped greedily at `width`.
fn wrapped_lines(text: &str, width: usize) -> usize {
    let (mut lines, mut cur) = (1, 0);
    for w in text.split(' ').map(visible_len) {
        if cur > 0 && cur + 1 + w > width {
            lines += 1;
            cur = w;
        } else {
            cur += if cur > 0 { 1 + w } else { w };
        }
    }
    lines
}

/// The widest line of `text`.
fn text_width(text: &str) -> usize {
    text.lines().map(visible_len).max().unwrap_or(0)
}

/// Renders one grid with a title line and footnotes, fitted to the width: optional
/// columns are left out (the grid's drop order) until it fits, and only then do
/// cells wrap inside the table.
pub fn render_grid(g: &Grid, st: &Style) -> String {
    // comfy-table colours cells through crossterm, which drops colour when NO_COLOR is
    // set: the choice made in `st` (the flag first, then NO_COLOR) must win.
    crossterm::style::force_color_output(st.color);
    let mut keep: Vec<usize> = (0..g.headers.len()).collect();
    let mut wrap_cells = None;
    if let Some(limit) = st.width {
        while text_width(&build(g, &keep, false, true, None).to_string()) > limit {
            match g.drop_order.iter().find(|c| keep.contains(c)) {
                Some(&c) => keep.retain(|&k| k != c),
                None => {
                    wrap_cells = Some(limit);
                    break;
                }
            }
        }
    }
    let t = build(g, &keep, st.color, st.width.is_some(), wrap_cells);
    let mut out = format!("{}\n{t}\n", st.heading(&g.title));
    let left_out: Vec<&str> = (0..g.headers.len())
        .filter(|c| !keep.contains(c))
        .map(|c| g.headers[c].as_str())
        .collect();
    if !left_out.is_empty() {
        out.push_str(&format!("  (--wide adds: {})\n", left_out.join(", ")));
    }
    for f in &g.footnotes {
        let line = format!("  {f}");
        if f.starts_with("warning:") {
            out.push_str(&st.warning(&line));
        } else {
            out.push_str(&line);
        }
        out.push('\n');
    }
    out
}

/// Whether a line belongs to a drawn table (never re-wrapped).
fn is_table_line(line: &str) -> bool {
    line.starts_with(['┌', '│', '╞', '├', '└', '┆'])
}

/// The final pass over table-format output: prose lines wrapped to the width (drawn
/// tables are already fitted). Colour is put on where a line is written, not here.
pub fn fit_text(text: &str, st: &Style) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        match st.width {
            Some(w) if !is_table_line(line) && visible_len(line) > w => {
                for l in wrap(line, w) {
                    out.push_str(&l);
                    out.push('\n');
                }
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The whole run: header, one table per probe, then what to do (the summary), the
/// recommendations in detail and the observations.
pub fn render_run(
    run: &Run,
    recs: &[Recommendation],
    observations: &[String],
    st: &Style,
) -> String {
    let mut out = format!("{}\n", run_header(run));
    for w in &run.warnings {
        out.push_str(&st.warning(&format!("warning: {w}")));
        out.push('\n');
    }
    for c in run.environment.caveats() {
        out.push_str(&format!("note: {c}\n"));
    }
    for g in probe_grids(run, st) {
        out.push('\n');
        out.push_str(&render_grid(&g, st));
    }
    out.push_str(&render_advice(recs, observations, "", st));
    out
}

/// The summary table, `between` (where the advice came from, say), each
/// recommendation in detail, and the observations.
pub fn render_advice(
    recs: &[Recommendation],
    observations: &[String],
    between: &str,
    st: &Style,
) -> String {
    let mut out = String::new();
    let summary = crate::report::advice::summary(recs);
    if !summary.rows.is_empty() {
        out.push('\n');
        out.push_str(&render_grid(&summary, st));
    }
    out.push_str(between);
    if !recs.is_empty() {
        out.push_str(&format!("\n{}\n", st.heading("recommendations in detail:")));
        for r in recs {
            for line in crate::report::advice::detail(r) {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    if !observations.is_empty() {
        out.push_str(&format!("\n{}\n", st.heading("observations:")));
        for a in observations {
            out.push_str(&format!("  {a}\n"));
        }
    }
    out
}

/// Machine facts as a table.
pub fn render_environment(env: &crate::sys::machine::Environment, st: &Style) -> String {
    render_grid(&environment_grid(env), st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_wider_than_their_cells_split_at_the_middle_space() {
        assert_eq!(split_header("GB/s (10^9 B/s)", 4), "GB/s\n(10^9 B/s)");
        assert_eq!(
            split_header("writer cs/GiB vol/invol", 12),
            "writer cs/GiB\nvol/invol"
        );
        assert_eq!(split_header("chunk", 3), "chunk");
        assert_eq!(split_header("median time", 20), "median time");
    }

    /// The layout that keeps every row within two lines wins over one printing fewer
    /// lines in all with a row of three: `run`'s summary at 100 columns.
    #[test]
    fn the_tallest_row_is_kept_lowest_first() {
        let row = |a: &str, b: &str, c: &str| vec![a.into(), b.into(), c.into(), "high".into()];
        let g = Grid {
            headers: ["operation", "do this", "why (the figure)", "confidence"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            rows: vec![
                row(
                    "reading at an offset",
                    "use pread",
                    "×1.32 against lseek+read (304 ns vs 401 ns)",
                ),
                row(
                    "reading a file repeatedly",
                    "use one descriptor kept open (pread)",
                    "×8.20 against open+read+close for each read (304 ns vs 2.49 µs)",
                ),
                row(
                    "moving data through a pipe",
                    "use 64 KiB chunks or larger in a default pipe",
                    "64 KiB–4 MiB within 5% of the best, 4 KiB costs ×1.72",
                ),
                row(
                    "copying a file durably (fsync)",
                    "use copy-file-range, or 2 others: equal here",
                    "tied within noise, and 0.0156 system calls per MiB instead of 2",
                ),
                row(
                    "moving data through a TCP socket",
                    "use 4 MiB chunks or larger",
                    "4 MiB alone within 5% of the best, 4 KiB costs ×2.49",
                ),
            ],
            flex: Some(2),
            ..Default::default()
        };
        let keep = [0, 1, 2, 3];
        let w = flex_widths(&g, &keep, 2, 100);
        assert!(w.iter().sum::<usize>() + 3 * 4 < 100, "{w:?}");
        let layout = Layout {
            g: &g,
            keep: &keep,
            flex: 2,
            avail: 100 - 13,
        };
        assert_eq!(layout.cost(&w).0, 2, "{w:?}");
    }

    fn grid(cols: usize, width: usize) -> Grid {
        let headers: Vec<String> = (0..cols).map(|i| format!("column{i}")).collect();
        let row: Vec<String> = (0..cols).map(|_| "x".repeat(width)).collect();
        Grid {
            title: "t".into(),
            headers,
            rows: vec![row],
            numeric: true,
            drop_order: vec![3, 2],
            ..Grid::default()
        }
    }

    #[test]
    fn a_table_drops_optional_columns_in_order_until_it_fits() {
        // Five columns of 20: 5 × 23 + 1 = 116 wide; without column 3: 93.
        let g = grid(5, 20);
        let style = |width| Style {
            width,
            ..Style::default()
        };
        let narrow = render_grid(&g, &style(Some(100)));
        let wide = render_grid(&g, &style(None));
        assert!(narrow.lines().all(|l| visible_len(l) <= 100), "{narrow}");
        let header = narrow.lines().nth(2).unwrap();
        assert!(
            !header.contains("column3") && header.contains("column2"),
            "{narrow}"
        );
        assert!(narrow.contains("(--wide adds: column3)"), "{narrow}");
        assert!(
            wide.contains("column3") && !wide.contains("--wide adds"),
            "{wide}"
        );
    }
}
