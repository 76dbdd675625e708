//! KV-cache bytes per token of a few open models, to turn `--kv-gib` into a pool size.
//!
//! Bytes per token = layers × KV heads × head dim × 2 (K and V) × bytes per element (bf16: 2),
//! from each model's `config.json` on huggingface.co (`num_hidden_layers`,
//! `num_key_value_heads`, `head_dim` or `hidden_size / num_attention_heads`). DeepSeek-V3 caches
//! one compressed latent per layer instead (multi-head latent attention): `kv_lora_rank` (512)
//! plus `qk_rope_head_dim` (64) elements per layer and token.

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvModel {
    /// The name `--kv-model` accepts.
    pub name: &'static str,
    /// KV bytes one token occupies in bf16.
    pub bytes_per_token: u64,
    /// Where the figure comes from.
    pub source: &'static str,
}

/// The table, smallest KV footprint last.
pub const KV_MODELS: &[KvModel] = &[
    KvModel {
        name: "llama-3.1-70b",
        // 80 layers × 8 KV heads × 128 × 2 × 2 bytes.
        bytes_per_token: 80 * 8 * 128 * 2 * 2,
        source: "meta-llama/Llama-3.1-70B config.json: 80 layers, 8 KV heads, head dim 128",
    },
    KvModel {
        name: "qwen3-32b",
        bytes_per_token: 64 * 8 * 128 * 2 * 2,
        source: "Qwen/Qwen3-32B config.json: 64 layers, 8 KV heads, head dim 128",
    },
    KvModel {
        name: "llama-3.1-8b",
        bytes_per_token: 32 * 8 * 128 * 2 * 2,
        source: "meta-llama/Llama-3.1-8B config.json: 32 layers, 8 KV heads, head dim 128",
    },
    KvModel {
        name: "deepseek-v3",
        bytes_per_token: 61 * (512 + 64) * 2,
        source: "deepseek-ai/DeepSeek-V3 config.json: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64 (MLA)",
    },
    KvModel {
        name: "qwen2.5-7b",
        bytes_per_token: 28 * 4 * 128 * 2 * 2,
        source: "Qwen/Qwen2.5-7B config.json: 28 layers, 4 KV heads, head dim 3584 / 28 = 128",
    },
];

/// The row for `name`, or an error listing the known names.
pub fn lookup(name: &str) -> Result<&'static KvModel, super::WorkloadError> {
    KV_MODELS
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| super::WorkloadError::KvModel {
            name: name.to_string(),
        })
}

/// Tokens that `gib` GiB of KV space hold for `model`.
pub fn tokens_in(gib: f64, model: &KvModel) -> u64 {
    (gib * (1u64 << 30) as f64 / model.bytes_per_token as f64).floor() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_8b_holds_524288_tokens_in_64_gib() {
        // 128 KiB per token (the `paged` default's derivation): 64 GiB / 128 KiB = 524,288.
        let m = lookup("llama-3.1-8b").unwrap();
        assert_eq!(m.bytes_per_token, 131_072);
        assert_eq!(tokens_in(64.0, m), 524_288);
        // DeepSeek-V3: 61 × 576 × 2 = 70,272 bytes.
        assert_eq!(lookup("deepseek-v3").unwrap().bytes_per_token, 70_272);
        assert!(lookup("gpt-2")
            .unwrap_err()
            .to_string()
            .contains("llama-3.1-8b"));
    }
}
