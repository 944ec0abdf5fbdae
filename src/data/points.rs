//! Generated point datasets: 2-D classification (spiral, circles, XOR, two gaussians) and
//! 1-D regression (sine, piecewise). Seeded and deterministic; coordinates lie in about [-1, 1].

use serde::{Deserialize, Serialize};

use crate::error::{ensure, Result};
use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum PointTask {
    Spiral,
    Circles,
    Xor,
    Gaussians,
    Sine,
    Piecewise,
    /// The user's own points, from `csv` (`x,y,label` rows for classes, `x,target` for a curve).
    Custom,
}

impl PointTask {
    pub fn is_regression(self) -> bool {
        matches!(self, PointTask::Sine | PointTask::Piecewise)
    }
    pub fn input_dim(self) -> usize {
        if self.is_regression() {
            1
        } else {
            2
        }
    }
}

/// Points with either class labels or regression targets.
#[derive(Debug, Clone, PartialEq)]
pub struct Points {
    /// (N, input_dim)
    pub inputs: Vec<f32>,
    pub input_dim: usize,
    /// (N) class ids, empty for regression
    pub labels: Vec<u32>,
    /// (N) targets, empty for classification
    pub targets: Vec<f32>,
    pub classes: usize,
}

impl Points {
    pub fn len(&self) -> usize {
        self.inputs.len() / self.input_dim
    }
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// Splits off the last `fraction` of a shuffled copy as validation data.
    pub fn split(&self, fraction: f64, seed: u64) -> (Points, Points) {
        let n = self.len();
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = Rng::new(seed);
        for i in (1..n).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let n_val = ((n as f64) * fraction).round() as usize;
        let (train, val) = order.split_at(n - n_val);
        (self.subset(train), self.subset(val))
    }

    fn subset(&self, idx: &[usize]) -> Points {
        let d = self.input_dim;
        Points {
            inputs: idx.iter().flat_map(|&i| self.inputs[i * d..(i + 1) * d].iter().copied()).collect(),
            input_dim: d,
            labels: if self.labels.is_empty() { vec![] } else { idx.iter().map(|&i| self.labels[i]).collect() },
            targets: if self.targets.is_empty() { vec![] } else { idx.iter().map(|&i| self.targets[i]).collect() },
            classes: self.classes,
        }
    }
}

/// Largest generated or user-supplied point set.
pub const MAX_POINTS: usize = 100_000;

/// Generates `n` points of `task` with Gaussian `noise` (standard deviation, coordinate units).
pub fn generate(task: PointTask, n: usize, noise: f64, seed: u64) -> Result<Points> {
    ensure(task != PointTask::Custom, "data.points.csv", || "the custom task trains on your own points: give them as CSV".into())?;
    ensure((1..=MAX_POINTS).contains(&n), "data.points.points", || format!("must be between 1 and {MAX_POINTS}, got {n}"))?;
    ensure(noise.is_finite() && (0.0..=1.0).contains(&noise), "data.points.noise", || format!("must be in [0, 1], got {noise}"))?;
    let mut rng = Rng::new(seed);
    let mut p = Points { inputs: Vec::with_capacity(n * 2), input_dim: task.input_dim(), labels: vec![], targets: vec![], classes: 2 };
    for i in 0..n {
        let class = (i % 2) as u32;
        let t = rng.uniform();
        let (x, y) = match task {
            PointTask::Spiral => {
                // Two arms, each 1.75 turns, the second rotated by half a turn.
                let r = 0.05 + 0.95 * t;
                let a = 1.75 * std::f64::consts::TAU * t + std::f64::consts::PI * class as f64;
                (r * a.cos(), r * a.sin())
            }
            PointTask::Circles => {
                let r = if class == 0 { 0.35 * t.sqrt() } else { 0.65 + 0.3 * t };
                let a = std::f64::consts::TAU * rng.uniform();
                (r * a.cos(), r * a.sin())
            }
            PointTask::Xor => {
                let (x, y) = (rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
                p.labels.push(u32::from((x > 0.0) != (y > 0.0)));
                p.inputs.extend([(x + noise * rng.normal()) as f32, (y + noise * rng.normal()) as f32]);
                continue;
            }
            PointTask::Gaussians => {
                let c = if class == 0 { -0.4 } else { 0.4 };
                (c + 0.25 * rng.normal(), c + 0.25 * rng.normal())
            }
            PointTask::Sine | PointTask::Piecewise | PointTask::Custom => {
                let x = rng.range(-1.0, 1.0);
                let y = if task == PointTask::Sine { (3.0 * x * std::f64::consts::PI / 2.0).sin() } else { piecewise(x) };
                p.inputs.push(x as f32);
                p.targets.push((y + noise * rng.normal()) as f32);
                continue;
            }
        };
        p.inputs.extend([(x + noise * rng.normal()) as f32, (y + noise * rng.normal()) as f32]);
        p.labels.push(class);
    }
    if task.is_regression() {
        p.classes = 0;
    }
    Ok(p)
}

/// A step, a ramp and a flat segment: a target an MLP must bend to fit.
fn piecewise(x: f64) -> f64 {
    if x < -0.3 {
        -0.5
    } else if x < 0.4 {
        -0.5 + (x + 0.3) * (1.3 / 0.7)
    } else {
        0.3
    }
}

/// The rows of a CSV of points: blank lines, `#` comments and a header line (a first row
/// that is not numbers) left out; each row with its 1-based line number.
fn csv_rows(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    let rows = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    rows.enumerate()
        .filter(|(k, (_, l))| !(*k == 0 && l.split(',').next().is_some_and(|c| c.trim().parse::<f64>().is_err())))
        .map(|(_, (i, l))| (i + 1, l.split(',').map(str::trim).collect()))
}

/// Parses user points from CSV lines `x,y,label` (classification) or `x,target` (regression).
pub fn from_csv(text: &str, regression: bool) -> Result<Points> {
    let mut p = Points { inputs: vec![], input_dim: if regression { 1 } else { 2 }, labels: vec![], targets: vec![], classes: 0 };
    let columns: &[&str] = if regression { &["x", "target"] } else { &["x", "y", "label"] };
    for (line, cols) in csv_rows(text) {
        let found = cols.len();
        ensure(found == columns.len(), CSV_FIELD, || {
            format!("line {line}: expected {} comma-separated values ({}), found {found}", columns.len(), columns.join(","))
        })?;
        let num = |column: usize| -> Result<f32> {
            let (s, name) = (cols[column], columns[column]);
            let bad = || format!("line {line}, column {name}: `{s}` is not a number");
            let v: f32 = s.parse().map_err(|_| crate::KilnError::invalid(CSV_FIELD, bad()))?;
            ensure(v.is_finite() && v.abs() <= 1e6, CSV_FIELD, || format!("line {line}, column {name}: `{s}` must be finite and within ±1e6"))?;
            Ok(v)
        };
        for column in 0..p.input_dim {
            p.inputs.push(num(column)?);
        }
        if regression {
            p.targets.push(num(1)?);
        } else {
            let label = cols[2].parse::<u32>().ok().filter(|&l| l <= 9);
            let label = label.ok_or_else(|| crate::KilnError::invalid(CSV_FIELD, format!("line {line}, column label: `{}` must be a class 0..=9", cols[2])))?;
            p.classes = p.classes.max(label as usize + 1);
            p.labels.push(label);
        }
        ensure(p.len() <= MAX_POINTS, CSV_FIELD, || format!("at most {MAX_POINTS} points"))?;
    }
    ensure(!p.is_empty(), CSV_FIELD, || "no points found".into())?;
    p.classes = p.classes.max(if regression { 0 } else { 2 });
    Ok(p)
}

/// The config field a CSV of points arrives in.
const CSV_FIELD: &str = "data.points.csv";

/// Parses a CSV of either kind, told apart by the first row: 3 columns `x,y,label`, 2 `x,target`.
pub fn from_csv_any(text: &str) -> Result<Points> {
    let Some((line, first)) = csv_rows(text).next() else {
        return Err(crate::KilnError::invalid(CSV_FIELD, "the file has no rows of numbers (it is empty, or only blank lines, # comments and a header)"));
    };
    let cols = first.len();
    let separator = [';', '\t'].into_iter().find(|&c| cols == 1 && first[0].contains(c));
    let hint = separator.map_or(String::new(), |c| format!("; the values look separated by {c:?}: use commas"));
    ensure(cols == 2 || cols == 3, CSV_FIELD, || format!("line {line}: expected 3 columns (x,y,label) or 2 (x,target), found {cols}{hint}"))?;
    from_csv(text, cols == 2)
}
