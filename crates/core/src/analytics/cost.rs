//! Throughput, cost and power per point (reference/inferencex-app.md §4.2–4.4, DESIGN.md §4).

/// Assumed per-GPU figures for one hardware type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HwSpec {
    /// Canonical hardware key (`h200`, `mi355x`, …).
    pub key: &'static str,
    /// All-in provisioned power per GPU in **kW** (chip plus its share of host and NICs;
    /// InferenceX-app `HW_REGISTRY`, "SemiAnalysis Datacenter Industry Model", revised 2026-07-14).
    pub all_in_kw: f64,
    /// GPU TDP in W.
    pub tdp_w: f64,
    /// $/GPU-hour, "Owning – Hyperscaler" (SemiAnalysis Market August 2025 pricing surveys).
    pub usd_h_hyperscaler: f64,
    /// $/GPU-hour, "Owning – Neocloud Giant".
    pub usd_h_neocloud: f64,
    /// $/GPU-hour, "3 Year Rental".
    pub usd_h_rental: f64,
}

/// The table of reference/inferencex-app.md §4.3 (column [B] for power). B300/GB300 prices are
/// InferenceX's temporary 1.2 × B200/GB200.
pub const HW_SPECS: &[HwSpec] = &[
    HwSpec {
        key: "h100",
        all_in_kw: 1.37,
        tdp_w: 700.0,
        usd_h_hyperscaler: 1.30,
        usd_h_neocloud: 1.69,
        usd_h_rental: 1.30,
    },
    HwSpec {
        key: "h200",
        all_in_kw: 1.37,
        tdp_w: 700.0,
        usd_h_hyperscaler: 1.41,
        usd_h_neocloud: 1.74,
        usd_h_rental: 1.60,
    },
    HwSpec {
        key: "b200",
        all_in_kw: 1.71,
        tdp_w: 1000.0,
        usd_h_hyperscaler: 1.95,
        usd_h_neocloud: 2.34,
        usd_h_rental: 2.90,
    },
    HwSpec {
        key: "b300",
        all_in_kw: 1.90,
        tdp_w: 1200.0,
        usd_h_hyperscaler: 2.34,
        usd_h_neocloud: 2.808,
        usd_h_rental: 3.48,
    },
    HwSpec {
        key: "gb200",
        all_in_kw: 1.87,
        tdp_w: 1200.0,
        usd_h_hyperscaler: 2.21,
        usd_h_neocloud: 2.75,
        usd_h_rental: 3.30,
    },
    HwSpec {
        key: "gb300",
        all_in_kw: 2.12,
        tdp_w: 1400.0,
        usd_h_hyperscaler: 2.652,
        usd_h_neocloud: 3.30,
        usd_h_rental: 3.96,
    },
    HwSpec {
        key: "mi300x",
        all_in_kw: 1.39,
        tdp_w: 750.0,
        usd_h_hyperscaler: 1.12,
        usd_h_neocloud: 1.40,
        usd_h_rental: 1.55,
    },
    HwSpec {
        key: "mi325x",
        all_in_kw: 1.69,
        tdp_w: 1000.0,
        usd_h_hyperscaler: 1.28,
        usd_h_neocloud: 1.59,
        usd_h_rental: 1.80,
    },
    HwSpec {
        key: "mi355x",
        all_in_kw: 2.09,
        tdp_w: 1400.0,
        usd_h_hyperscaler: 1.48,
        usd_h_neocloud: 1.90,
        usd_h_rental: 2.10,
    },
];

/// Spec of a hardware key, looked up by its base token (the part before the first `-` or `_`,
/// so `h200_trt_mtp` and `h200-nv` find `h200`). `None` for unknown hardware (costs and
/// provisioned power are then not computed).
pub fn hw_spec(hardware: &str) -> Option<&'static HwSpec> {
    let base = hardware
        .split(['-', '_'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    HW_SPECS.iter().find(|s| s.key == base)
}

/// The three cost regimes of InferenceX (`costh`, `costn`, `costr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regime {
    /// Owning – Hyperscaler.
    Hyperscaler,
    /// Owning – Neocloud Giant.
    Neocloud,
    /// 3-year rental.
    Rental,
}

impl Regime {
    /// All regimes in InferenceX's order.
    pub const ALL: [Regime; 3] = [Regime::Hyperscaler, Regime::Neocloud, Regime::Rental];
    /// $/GPU-hour of this regime for `spec`.
    pub fn usd_per_gpu_hour(self, spec: &HwSpec) -> f64 {
        match self {
            Regime::Hyperscaler => spec.usd_h_hyperscaler,
            Regime::Neocloud => spec.usd_h_neocloud,
            Regime::Rental => spec.usd_h_rental,
        }
    }
    /// Short name (`hyperscaler`, `neocloud`, `rental`).
    pub fn as_str(self) -> &'static str {
        match self {
            Regime::Hyperscaler => "hyperscaler",
            Regime::Neocloud => "neocloud",
            Regime::Rental => "rental",
        }
    }
}

/// Throughput per GPU (tok/s/GPU) = total tok/s ÷ GPUs; `None` when `gpus` is 0.
pub fn per_gpu(tok_s: f64, gpus: u32) -> Option<f64> {
    (gpus > 0).then(|| tok_s / f64::from(gpus))
}

/// Interactivity (tok/s/user) from a TPOT statistic in **ms**: 1000 / TPOT (DESIGN.md §4).
/// `None` when TPOT ≤ 0.
pub fn interactivity(tpot_ms: f64) -> Option<f64> {
    (tpot_ms > 0.0).then(|| 1000.0 / tpot_ms)
}

/// $ per million tokens = C / (X × 3600 / 10⁶) with C in $/GPU-hour and X in tok/s/GPU.
/// `None` when X ≤ 0 (InferenceX shows 0 there).
pub fn usd_per_m_tokens(usd_per_gpu_hour: f64, tok_s_per_gpu: f64) -> Option<f64> {
    (tok_s_per_gpu > 0.0).then(|| usd_per_gpu_hour / (tok_s_per_gpu * 3600.0 / 1e6))
}

/// Tokens per US dollar = 10⁶ ÷ ($ per million tokens): InferenceX's "tokens per $1", the
/// reciprocal view of [`usd_per_m_tokens`]. `None` when the cost is not a positive finite number.
pub fn tokens_per_usd(usd_per_m: f64) -> Option<f64> {
    (usd_per_m.is_finite() && usd_per_m > 0.0).then(|| 1e6 / usd_per_m)
}

/// Tokens per second per provisioned MW = X × 1000 / P, X in tok/s/GPU, P in kW/GPU (1 MW feeds
/// 1000 / P GPUs). Used both for the table's all-in kW and for a custom kW: this is our
/// deliberate fix of InferenceX-app's custom-power formula, which computes
/// (X × 1000 / P_table) ÷ P_table × user_kW and so scales the wrong way (DESIGN.md §4).
/// `None` when P ≤ 0.
pub fn tok_s_per_mw(tok_s_per_gpu: f64, kw_per_gpu: f64) -> Option<f64> {
    (kw_per_gpu > 0.0).then(|| tok_s_per_gpu * 1000.0 / kw_per_gpu)
}

/// Provisioned joules per token = P × 1000 / X (W ÷ tok/s), P in kW/GPU, X in tok/s/GPU.
/// `None` when X ≤ 0 or P ≤ 0.
pub fn joules_per_token(kw_per_gpu: f64, tok_s_per_gpu: f64) -> Option<f64> {
    (tok_s_per_gpu > 0.0 && kw_per_gpu > 0.0).then(|| kw_per_gpu * 1000.0 / tok_s_per_gpu)
}

/// Measured joules per token = energy (J) ÷ tokens; `None` when tokens is 0.
pub fn measured_joules_per_token(energy_j: f64, tokens: f64) -> Option<f64> {
    (tokens > 0.0).then(|| energy_j / tokens)
}

/// Per-GPU throughputs of a point, tok/s/GPU.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Throughputs {
    /// Total (input + output) tok/s/GPU (`tput_per_gpu`).
    pub total: f64,
    /// Input tok/s/GPU.
    pub input: f64,
    /// Output tok/s/GPU.
    pub output: f64,
}

/// Cost and power figures derived for one point, each `None` when not computable.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Derived {
    /// $/M tokens for [`Regime::ALL`] (in order) × (total, input, output).
    pub usd_per_m: [[Option<f64>; 3]; 3],
    /// $/M (total, input, output) at a custom $/GPU-hour, when given.
    pub usd_per_m_custom: [Option<f64>; 3],
    /// Tokens per $1 ([`tokens_per_usd`] of [`Derived::usd_per_m`]), same layout.
    pub tokens_per_usd: [[Option<f64>; 3]; 3],
    /// Tokens per $1 at the custom $/GPU-hour (total, input, output), when given.
    pub tokens_per_usd_custom: [Option<f64>; 3],
    /// tok/s per provisioned MW (total, input, output) from the table kW, or the custom kW when
    /// given.
    pub tok_s_per_mw: [Option<f64>; 3],
    /// Provisioned J/token (total, input, output), same power basis.
    pub joules_per_token: [Option<f64>; 3],
}

/// Derives every cost/power figure of a point. `custom_usd_h` overrides nothing but adds the
/// custom cost column; `custom_kw` replaces the table's all-in kW.
pub fn derive(
    hardware: &str,
    t: Throughputs,
    custom_usd_h: Option<f64>,
    custom_kw: Option<f64>,
) -> Derived {
    let spec = hw_spec(hardware);
    let xs = [t.total, t.input, t.output];
    let mut d = Derived::default();
    if let Some(s) = spec {
        for (r, regime) in Regime::ALL.iter().enumerate() {
            for (k, x) in xs.iter().enumerate() {
                d.usd_per_m[r][k] = usd_per_m_tokens(regime.usd_per_gpu_hour(s), *x);
                d.tokens_per_usd[r][k] = d.usd_per_m[r][k].and_then(tokens_per_usd);
            }
        }
    }
    if let Some(c) = custom_usd_h {
        for (k, x) in xs.iter().enumerate() {
            d.usd_per_m_custom[k] = usd_per_m_tokens(c, *x);
            d.tokens_per_usd_custom[k] = d.usd_per_m_custom[k].and_then(tokens_per_usd);
        }
    }
    if let Some(kw) = custom_kw.or(spec.map(|s| s.all_in_kw)) {
        for (k, x) in xs.iter().enumerate() {
            d.tok_s_per_mw[k] = tok_s_per_mw(*x, kw);
            d.joules_per_token[k] = joules_per_token(kw, *x);
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9 * b.abs().max(1.0))
    }

    #[test]
    fn worked_cost_numbers() {
        // H200 at 1000 tok/s/GPU: 3.6 M tokens per GPU-hour; hyperscaler 1.41 $/h → 0.391666… $/M.
        assert!(close(usd_per_m_tokens(1.41, 1000.0), 1.41 / 3.6));
        // Rental 1.60 $/h at 250 output tok/s/GPU: 0.9 M tok/h → 1.777… $/M.
        assert!(close(usd_per_m_tokens(1.60, 250.0), 1.6 / 0.9));
        assert_eq!(usd_per_m_tokens(1.0, 0.0), None);
        // Tokens per $1 (issue 42): $0.50 per million tokens buys 2 M tokens per dollar.
        assert_eq!(tokens_per_usd(0.5), Some(2e6));
        assert_eq!(tokens_per_usd(0.0), None);
        assert_eq!(tokens_per_usd(f64::INFINITY), None);
    }

    #[test]
    fn worked_power_numbers() {
        // 1000 tok/s/GPU at 1.37 kW/GPU → 729.927 GPUs/MW → 729 927.007… tok/s/MW.
        assert!(close(tok_s_per_mw(1000.0, 1.37), 1_000_000.0 / 1.37));
        // J/token = 1370 W / 1000 tok/s = 1.37 J.
        assert!(close(joules_per_token(1.37, 1000.0), 1.37));
        // Custom 2 kW/GPU: tok/s/MW = 1000 × 1000 / 2 = 500 000 (the app would give
        // (1000·1000/1.37)/1.37·2 = 1 065 583.6 — inverted, see docs).
        assert!(close(tok_s_per_mw(1000.0, 2.0), 500_000.0));
        assert!(close(measured_joules_per_token(9000.0, 3000.0), 3.0));
    }

    #[test]
    fn per_gpu_and_interactivity() {
        assert_eq!(per_gpu(8000.0, 8), Some(1000.0));
        assert_eq!(per_gpu(1.0, 0), None);
        assert_eq!(interactivity(20.0), Some(50.0));
        assert_eq!(interactivity(0.0), None);
    }

    #[test]
    fn derive_uses_base_token_and_custom_values() {
        let t = Throughputs {
            total: 1000.0,
            input: 800.0,
            output: 200.0,
        };
        let d = derive("h200_trt_mtp", t, Some(2.0), None);
        assert!(close(d.usd_per_m[0][0], 1.41 / 3.6)); // hyperscaler total
        assert!(close(d.usd_per_m[1][2], 1.74 / 0.72)); // neocloud output: 200 tok/s → 0.72 M/h
        assert!(close(d.usd_per_m[2][1], 1.60 / 2.88)); // rental input: 800 → 2.88 M/h
        assert!(close(d.usd_per_m_custom[0], 2.0 / 3.6));
        assert!(close(d.tok_s_per_mw[0], 1_000_000.0 / 1.37));
        let d = derive("h200", t, None, Some(2.0));
        assert!(close(d.tok_s_per_mw[2], 100_000.0));
        assert!(close(d.joules_per_token[2], 10.0));
        let d = derive("cpu", t, None, None);
        assert_eq!(d.usd_per_m[0][0], None);
        assert_eq!(d.tok_s_per_mw[0], None);
    }
}
