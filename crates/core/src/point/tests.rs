use std::collections::BTreeMap;
use std::path::Path;

use super::*;

const SN: &str = r#"{"image": "lmsysorg/sglang:v0.5.16-cu130", "model": "nvidia/DeepSeek-R1-0528-FP4-V2", "model-prefix": "dsr1", "precision": "fp4", "framework": "sglang", "runner": "b200", "isl": 8192, "osl": 1024, "tp": 4, "pp": 1, "dcp-size": 1, "pcp-size": 1, "conc": 64, "max-model-len": 9472, "ep": 4, "dp-attn": true, "spec-decoding": "none", "exp-name": "dsr1_8k1k", "disagg": false, "run-eval": false}"#;
const MN: &str = r#"{"image": "lmsysorg/sglang:nightly", "model": "deepseek-ai/DeepSeek-V4-Pro", "model-prefix": "dsv4", "precision": "fp4", "framework": "dynamo-sglang", "runner": "b300", "isl": 8192, "osl": 1024, "spec-decoding": "none", "prefill": {"num-worker": 1, "tp": 4, "ep": 1, "dp-attn": false, "additional-settings": ["CONFIG_FILE=recipes/a.yaml"], "pp": 1, "dcp-size": 1, "pcp-size": 1}, "decode": {"num-worker": 2, "tp": 8, "ep": 8, "dp-attn": true, "pp": 1, "dcp-size": 1, "pcp-size": 1}, "conc": [1, 8, 16, 32], "max-model-len": 9472, "exp-name": "dsv4_8k1k", "disagg": true, "run-eval": true, "kv-p2p-transfer": "nixl", "eval-conc": 32}"#;
const AG: &str = r#"{"image": "img", "model": "deepseek-ai/DeepSeek-V4-Pro", "model-prefix": "dsv4", "precision": "fp4", "framework": "sglang", "runner": "cluster:b200-dgxc", "tp": 8, "pp": 1, "dcp-size": 1, "pcp-size": 1, "ep": 1, "dp-attn": false, "spec-decoding": "mtp", "conc": 8, "kv-offloading": "dram", "total-cpu-dram-gb": 2399, "duration": 3600, "exp-name": "dsv4_tp8_conc8_kvdram-hicache_spec-mtp", "scenario-type": "agentic-coding", "kv-offload-backend": {"name": "hicache"}, "recipe-fingerprint": "d04bb42bd5653cc3ae03432288959367731c646b9b3fbf00150d25a335071355", "priority": 3}"#;

fn point(row: &str, runner_name: &str, conc: u32) -> PointConfig {
    let row: MatrixRow = serde_json::from_str(row).unwrap();
    PointConfig::from_row(&row, runner_name, conc)
}

/// The identity InferenceX's `process_result.py` reads from the point's environment: what the
/// runner built before the typed path (env map → `JobIdentity::from_lookup`).
fn identity_via_env(p: &PointConfig) -> Result<JobIdentity, IdentityError> {
    let env: BTreeMap<String, String> = p.inferencex_env(0, Path::new("/r")).into_iter().collect();
    JobIdentity::from_lookup(|k| env.get(k).cloned())
}

#[test]
fn result_filename_single_node_matches_the_reference_example() {
    assert_eq!(
        point(SN, "b200-dgxc_03", 64).result_filename(),
        "dsr1_8k1k_fp4_sglang_tp4-pp1-dcp1-pcp1-ep4-dpatrue_disagg-false_spec-none_conc64_b200-dgxc_03"
    );
}

#[test]
fn result_filename_multinode_names_both_pools_and_every_concurrency() {
    assert_eq!(
        point(MN, "b300-nv_01", 8).result_filename(),
        "dsv4_8k1k_fp4_dynamo-sglang_prefill-tp4-pp1-dcp1-pcp1-ep1-dpfalse-nw1_decode-tp8-pp1-dcp1-pcp1-ep8-dptrue-nw2_disagg-true_spec-none_conc1x8x16x32_b300-nv_01"
    );
}

#[test]
fn result_filename_appends_sixteen_characters_of_the_recipe_fingerprint() {
    assert_eq!(
        point(AG, "b200-dgxc_00", 8).result_filename(),
        "dsv4_tp8_conc8_kvdram-hicache_spec-mtp_fp4_sglang_tp8-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-mtp_conc8_b200-dgxc_00_recipe-d04bb42bd5653cc3"
    );
    // A fingerprint that is not hex (bad input) is cut by characters, never mid-character.
    let mut p = point(SN, "r_0", 64);
    p.recipe_fingerprint = Some("ééééééééééééééééé".into());
    assert!(p
        .result_filename()
        .ends_with("_r_0_recipe-éééééééééééééééé"));
    // Absent sizes and spec take their defaults.
    let bare = r#"{"image": "i", "model": "m", "model-prefix": "m", "precision": "bf16", "framework": "vllm", "runner": "cpu", "conc": 2, "exp-name": "e", "spec-decoding": ""}"#;
    assert_eq!(
        point(bare, "cpu_0", 2).result_filename(),
        "e_bf16_vllm_tp1-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc2_cpu_0"
    );
}

#[test]
fn job_identity_is_what_the_environment_contract_gives() {
    let sn = point(SN, "b200-dgxc_03", 64);
    let id = sn.job_identity().unwrap();
    assert_eq!(Ok(id.clone()), identity_via_env(&sn));
    assert_eq!(id.runner_type, "b200");
    assert_eq!(id.result_filename, sn.result_filename());
    assert_eq!((id.isl, id.osl, id.num_gpus()), (8192, 1024, 4));
    assert_eq!(
        id.topology,
        Topology::SingleNode {
            parallelism: Parallelism {
                tp: 4,
                pp: 1,
                dcp_size: 1,
                pcp_size: 1,
                ep: 4
            },
            dp_attention: "true".into()
        }
    );
    // Agentic rows: ISL = OSL = 0, the fingerprint kept whole.
    let ag = point(AG, "x_0", 8);
    let id = ag.job_identity().unwrap();
    assert_eq!(Ok(id.clone()), identity_via_env(&ag));
    assert_eq!((id.isl, id.osl), (0, 0));
    assert_eq!(id.recipe_fingerprint.len(), 64);
    // Router metadata with a version is carried; without one, no identity, as from the env.
    let mut r = sn.clone();
    r.router = Some(Component {
        name: "sglang-router".into(),
        version: Some("0.2.1".into()),
    });
    r.kv_p2p_transfer = Some(String::new());
    let id = r.job_identity().unwrap();
    assert_eq!(Ok(id.clone()), identity_via_env(&r));
    assert_eq!(
        id.router,
        Some(serde_json::json!({"name": "sglang-router", "version": "0.2.1"}))
    );
    assert_eq!(id.kv_p2p_transfer, None);
    for version in [None, Some(" ".to_string())] {
        r.router = Some(Component {
            name: "sglang-router".into(),
            version,
        });
        assert!(matches!(
            r.job_identity(),
            Err(IdentityError::Invalid { ref var, .. }) if var == "ROUTER_METADATA"
        ));
        assert!(identity_via_env(&r).is_err());
    }
}

#[test]
fn job_identity_refuses_what_the_environment_contract_refuses() {
    // Multinode: the GPU counts are the engine's.
    let mn = point(MN, "b300-nv_01", 8);
    assert_eq!(
        mn.job_identity(),
        Err(IdentityError::Missing(vec![
            "PREFILL_GPUS".into(),
            "DECODE_GPUS".into()
        ]))
    );
    assert_eq!(identity_via_env(&mn), mn.job_identity());
    // Disaggregated single node.
    let mut d = point(SN, "b200-dgxc_03", 64);
    d.disagg = true;
    assert_eq!(
        d.job_identity(),
        Err(IdentityError::DisaggRequiresMultinode)
    );
    assert_eq!(identity_via_env(&d), d.job_identity());
    // A size of 0.
    let mut z = point(SN, "b200-dgxc_03", 64);
    z.parallelism.ep = 0;
    assert!(matches!(
        z.job_identity(),
        Err(IdentityError::Invalid { ref var, .. }) if var == "EP_SIZE"
    ));
    assert!(identity_via_env(&z).is_err());
}

#[test]
fn inferencex_env_has_inferencex_names_and_values() {
    let env: BTreeMap<_, _> = point(SN, "b200-dgxc_03", 64)
        .inferencex_env(8888, Path::new("/r"))
        .into_iter()
        .collect();
    // TP, EP_SIZE, DP_ATTENTION, GPU_COUNT, … : runner's jobspec tests (env_contract).
    assert_eq!(env["RUNNER_TYPE"], "b200");
    assert_eq!(env["RUNNER_NAME"], "b200-dgxc_03");
    assert_eq!(env["RESULT_DIR"], "/r");
    assert!(!env.contains_key("IS_MULTINODE"));
    let mn: BTreeMap<_, _> = point(MN, "x_0", 8)
        .inferencex_env(8888, Path::new("/r"))
        .into_iter()
        .collect();
    assert_eq!(mn["CONC"], "8");
    assert_eq!(mn["IS_MULTINODE"], "true");
    assert_eq!(mn["PREFILL_TP"], "4");
    assert_eq!(mn["DECODE_NUM_WORKERS"], "2");
    assert_eq!(mn["DECODE_DP_ATTN"], "true");
    assert_eq!(mn["CONFIG_FILE"], "recipes/a.yaml");
    assert_eq!(mn["KV_P2P_TRANSFER"], "nixl");
}

/// The eval's `meta_env.json`, byte for byte (key order included), for a multinode row's eval
/// at its `eval-conc` and an agentic row's.
#[test]
fn eval_meta_env_names_the_point_as_inferencex_eval_collector_reads_it() {
    let mn = point(MN, "b300-nv_01", 32);
    assert_eq!(
        serde_json::to_string(&mn.eval_meta_env()).unwrap(),
        concat!(
            r#"{"is_multinode":true,"framework":"dynamo-sglang","precision":"fp4","#,
            r#""spec_decoding":"none","recipe_fingerprint":"","tp":1,"pp":1,"dcp_size":1,"#,
            r#""pcp_size":1,"conc":32,"ep":1,"dp_attention":false,"#,
            r#""model":"deepseek-ai/DeepSeek-V4-Pro","infmax_model_prefix":"dsv4","hw":"b300","#,
            r#""isl":"8192","osl":"1024","result_filename":"dsv4_8k1k_fp4_dynamo-sglang_prefill-tp4-pp1-dcp1-pcp1-ep1-dpfalse-nw1_decode-tp8-pp1-dcp1-pcp1-ep8-dptrue-nw2_disagg-true_spec-none_conc1x8x16x32_b300-nv_01","#,
            r#""prefill_tp":4,"prefill_pp":1,"prefill_dcp_size":1,"prefill_pcp_size":1,"#,
            r#""prefill_ep":1,"prefill_dp_attention":false,"prefill_num_workers":1,"#,
            r#""decode_tp":8,"decode_pp":1,"decode_dcp_size":1,"decode_pcp_size":1,"#,
            r#""decode_ep":8,"decode_dp_attention":true,"decode_num_workers":2}"#
        )
    );
    let ag = point(AG, "b200-dgxc_00", 8).eval_meta_env();
    assert_eq!(
        (&ag["isl"], &ag["osl"], &ag["scenario_type"], &ag["hw"]),
        (
            &serde_json::json!(""),
            &serde_json::json!(""),
            &serde_json::json!("agentic-coding"),
            &serde_json::json!("cluster:b200-dgxc")
        )
    );
    assert_eq!(ag["recipe_fingerprint"].as_str().map(str::len), Some(64));
    assert!(ag.get("prefill_tp").is_none());
}
