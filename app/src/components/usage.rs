//! CPU and memory in use, from the cluster's metrics API: a panel for a Pod, a node,
//! a workload or a Stack (figures beside requests and limits, the last minutes drawn
//! small), and the usage a Pod table shows in two columns. metrics-server keeps only
//! its latest figures, so the page asks again every [`EVERY_MS`] and keeps the
//! history itself, while it is open.

use std::collections::{BTreeMap, VecDeque};

use leptos::prelude::*;

use portico_core::usage::{Amounts, Usage, UsageReport, UsageTarget, cpu_text, memory_text};

/// How often the page asks: metrics-server's resolution on the local cluster.
pub const EVERY_MS: u64 = 15_000;
/// Samples kept per row: the last ten minutes at [`EVERY_MS`].
const KEPT: usize = 40;

/// What the page last heard: nothing yet, figures, or why there are none.
#[derive(Clone, Debug, PartialEq)]
pub enum Heard {
    Nothing,
    Usage(Usage),
    Failed(String),
}

/// Asks for `target`'s usage now and every [`EVERY_MS`] while the calling component
/// lives (on the page only: nothing is asked while rendering on the server).
pub fn use_usage(target: Signal<Option<UsageTarget>>) -> RwSignal<Heard> {
    let heard = RwSignal::new(Heard::Nothing);
    #[cfg(feature = "hydrate")]
    {
        use leptos_use_interval_fn::{UseIntervalFnOptions, use_interval_fn_with_options};
        let ask = move || {
            let Some(asked) = target.get_untracked() else {
                return;
            };
            leptos::task::spawn_local(async move {
                let answer = match crate::api::fetch_usage(asked.clone()).await {
                    Ok(usage) => Heard::Usage(usage),
                    Err(e) => Heard::Failed(e.to_string()),
                };
                // An answer for a target the page has left, or for a page gone, is
                // dropped.
                if target.try_get_untracked().flatten().as_ref() == Some(&asked) {
                    heard.try_set(answer);
                }
            });
        };
        let _asking = use_interval_fn_with_options(
            ask,
            EVERY_MS,
            UseIntervalFnOptions::default().immediate_callback(true),
        );
        // A new target (another namespace) is asked about at once.
        Effect::new(move |previous: Option<Option<UsageTarget>>| {
            let now = target.get();
            if previous.is_some_and(|p| p != now) {
                heard.set(Heard::Nothing);
                ask();
            }
            now
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = target;
    heard
}

/// A row's figures over time, newest last.
type History = BTreeMap<String, VecDeque<(u64, u64)>>;

/// A page's usage and the figures kept since it opened. Provided by a page whose
/// object redraws (its panel is rebuilt on every change of the object): the asking
/// and the history outlive the panel.
#[derive(Clone, Copy)]
pub struct UsageFeed {
    heard: RwSignal<Heard>,
    history: RwSignal<History>,
    node: Memo<bool>,
}

impl UsageFeed {
    /// Asks about `target` while the calling component lives, keeps the last minutes,
    /// and provides both to the [`UsagePanel`] below.
    pub fn provide(target: Signal<Option<UsageTarget>>) {
        let heard = use_usage(target);
        let history = RwSignal::new(History::new());
        let last_measured = StoredValue::new(None::<String>);
        // Another target starts its own history.
        Effect::new(move |previous: Option<Option<UsageTarget>>| {
            let now = target.get();
            if previous.is_some_and(|p| p != now) {
                history.set(History::new());
                last_measured.set_value(None);
            }
            now
        });
        Effect::new(move |_| {
            let Heard::Usage(Usage::Measured(report)) = heard.get() else {
                return;
            };
            // The same measurement asked twice is one sample.
            if report.measured_at.is_some() && last_measured.get_value() == report.measured_at {
                return;
            }
            last_measured.set_value(report.measured_at.clone());
            history.update(|h| {
                h.retain(|name, _| report.rows.iter().any(|r| &r.name == name));
                for row in &report.rows {
                    let kept = h.entry(row.name.clone()).or_default();
                    kept.push_back((row.cpu.used, row.memory.used));
                    while kept.len() > KEPT {
                        kept.pop_front();
                    }
                }
            });
        });
        let node = Memo::new(move |_| matches!(target.get(), Some(UsageTarget::Node { .. })));
        provide_context(UsageFeed {
            heard,
            history,
            node,
        });
    }
}

/// A panel of usage: one row per container, Pod or node, from the page's
/// [`UsageFeed`] (nothing without one).
#[component]
pub fn UsagePanel() -> impl IntoView {
    let UsageFeed {
        heard,
        history,
        node,
    } = use_context::<UsageFeed>()?;
    Some(view! {
        <section class="panel" data-testid="usage-panel">
            <h2>"Usage"</h2>
            {move || match heard.get() {
                Heard::Nothing => view! { <p class="subtle">"Asking the metrics API…"</p> }.into_any(),
                Heard::Failed(why) => view! { <p class="error" data-testid="usage-error">{why}</p> }.into_any(),
                Heard::Usage(Usage::NotServed(why)) => {
                    view! { <p class="subtle" data-testid="usage-not-served">{why}</p> }.into_any()
                }
                Heard::Usage(Usage::Measured(report)) => {
                    let ceiling = if node.get_untracked() { "Allocatable" } else { "Limit" };
                    view! { <UsageTable report ceiling history/> }.into_any()
                }
            }}
        </section>
    })
}

#[component]
fn UsageTable(
    report: UsageReport,
    ceiling: &'static str,
    history: RwSignal<History>,
) -> impl IntoView {
    let measured = report
        .measured_at
        .clone()
        .map(|at| format!("Measured at {at}; asked again every {} s.", EVERY_MS / 1000));
    let missing = report.missing.clone();
    let truncated = report.truncated.then(|| {
        view! { <p class="subtle">"Only the first Pods are shown."</p> }
    });
    view! {
        {(!report.rows.is_empty()).then(|| view! {
            <table class="grid usage" data-testid="usage-table">
                <thead><tr><th>"Name"</th><th>"CPU"</th><th>"Memory"</th></tr></thead>
                <tbody>
                    {report.rows.iter().map(|row| {
                        let name = row.name.clone();
                        let series = move |pick: fn(&(u64, u64)) -> u64| {
                            Signal::derive(move || history.with(|h| {
                                h.get(&name).map(|kept| kept.iter().map(pick).collect::<Vec<u64>>()).unwrap_or_default()
                            }))
                        };
                        let (cpu_values, memory_values) = (series.clone()(|s| s.0), series(|s| s.1));
                        view! {
                            <tr data-usage-row=row.name.clone()>
                                <td class="mono">{row.name.clone()}</td>
                                <Figures amounts=row.cpu text=cpu_text ceiling values=cpu_values/>
                                <Figures amounts=row.memory text=memory_text ceiling values=memory_values/>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        })}
        {missing.into_iter().map(|m| view! { <p class="subtle" data-testid="usage-missing">{m}</p> }).collect_view()}
        {truncated}
        {measured.map(|m| view! { <p class="subtle small">{m}</p> })}
    }
}

/// One resource of a row: in use (with its share of the ceiling) and the last
/// minutes drawn, then the request and the ceiling (`ceiling` names it: a limit, or
/// what a node can allocate).
#[component]
fn Figures(
    amounts: Amounts,
    text: fn(u64) -> String,
    ceiling: &'static str,
    values: Signal<Vec<u64>>,
) -> impl IntoView {
    let share = amounts
        .percent_of_ceiling()
        .map(|p| format!(" ({p}%)"))
        .unwrap_or_default();
    let over_request = amounts.request.is_some_and(|r| amounts.used > r);
    let or_none = |v: Option<u64>| v.map(text).unwrap_or_else(|| "none".into());
    // A node has no request of its own: only what it can allocate.
    let bounds = match ceiling {
        "Limit" => format!(
            "request {} · limit {}",
            or_none(amounts.request),
            or_none(amounts.ceiling)
        ),
        other => format!("{} {}", other.to_lowercase(), or_none(amounts.ceiling)),
    };
    view! {
        <td>
            <div class="usage-figure">
                <span class="mono" class:warn=over_request data-testid="usage-used">{text(amounts.used)}{share}</span>
                <Sparkline values top=amounts.ceiling/>
            </div>
            <div class="mono small subtle" data-testid="usage-bounds">{bounds}</div>
        </td>
    }
}

const SPARK_WIDTH: f64 = 120.0;
const SPARK_HEIGHT: f64 = 24.0;

/// The kept samples as a line, scaled to the ceiling (or the highest sample).
#[component]
fn Sparkline(values: Signal<Vec<u64>>, top: Option<u64>) -> impl IntoView {
    // Each sample's place: the newest at the right edge, a ceiling (or the highest
    // sample) at the top.
    let placed = move || {
        values.with(|v| {
            let high = v
                .iter()
                .copied()
                .max()
                .unwrap_or(0)
                .max(top.unwrap_or(0))
                .max(1) as f64;
            let step = (SPARK_WIDTH - 2.0) / (KEPT.saturating_sub(1)).max(1) as f64;
            let start = KEPT.saturating_sub(v.len()) as f64 * step;
            v.iter()
                .enumerate()
                .map(|(i, value)| {
                    let x = start + i as f64 * step;
                    let y = SPARK_HEIGHT - (*value as f64 / high) * (SPARK_HEIGHT - 2.0) - 1.0;
                    (x, y)
                })
                .collect::<Vec<(f64, f64)>>()
        })
    };
    let points = move || {
        (placed().iter())
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // The newest sample as a dot: one sample is no line yet.
    let newest = move || placed().last().copied();
    view! {
        <svg class="sparkline" viewBox=format!("0 0 {SPARK_WIDTH} {SPARK_HEIGHT}") width="120" height="24"
            role="img" aria-label=move || format!("{} samples", values.with(Vec::len))>
            <polyline points=points fill="none" stroke="currentColor" stroke-width="1.5"/>
            {move || newest().map(|(x, y)| view! { <circle cx=format!("{x:.1}") cy=format!("{y:.1}") r="2" fill="currentColor"/> })}
        </svg>
    }
}

/// A Pod table's usage: `namespace/name` → (millicores, bytes), or why there is
/// none. Asked while `target` (a [`UsageTarget::Table`]) is `Some`: the page shows
/// Pods.
pub fn use_table_usage(target: Signal<Option<UsageTarget>>) -> Memo<TableUsage> {
    let heard = use_usage(target);
    Memo::new(move |_| match heard.get() {
        _ if target.with(Option::is_none) => TableUsage::Waiting,
        Heard::Nothing => TableUsage::Waiting,
        Heard::Failed(why) | Heard::Usage(Usage::NotServed(why)) => TableUsage::None(why),
        Heard::Usage(Usage::Measured(report)) => TableUsage::Figures(
            report
                .rows
                .into_iter()
                .map(|r| (r.name, (r.cpu.used, r.memory.used)))
                .collect(),
        ),
    })
}

/// What a Pod table's usage columns show.
#[derive(Clone, Debug, PartialEq)]
pub enum TableUsage {
    Waiting,
    /// Why there are no figures, in a sentence (the columns' title).
    None(String),
    Figures(BTreeMap<String, (u64, u64)>),
}

impl TableUsage {
    pub fn has_figures(&self) -> bool {
        matches!(self, TableUsage::Figures(_))
    }

    /// The CPU and memory cells of the Pod `key` (`namespace/name`), as `kubectl top
    /// pod` prints them; empty while unknown.
    pub fn cells(&self, key: &str) -> (String, String) {
        match self {
            TableUsage::Figures(f) => f
                .get(key)
                .map(|(cpu, mem)| (cpu_text(*cpu), memory_text(*mem)))
                .unwrap_or_default(),
            _ => Default::default(),
        }
    }
}
