/**
 * The captioner's score rules, as transformers' logits processors apply them before each token is
 * chosen (RepetitionPenaltyLogitsProcessor, NoRepeatNGramLogitsProcessor,
 * MinLengthLogitsProcessor, MinNewTokensLengthLogitsProcessor). Without them a ViT-GPT2 export
 * loops ("a man in a man in a"): its generation config asks for them and decoding must honour it.
 *
 * `ids` is the decoder's whole input for the step: the start token, then the generated tokens
 * (transformers counts the start token too, both for the penalty and for min_length).
 */

export interface ScoreRules {
  readonly eosIds: readonly number[];
  /** repetition_penalty: 1 = off; above 1 discourages every token already in `ids`. */
  readonly repetitionPenalty: number;
  /** no_repeat_ngram_size: 0 = off; n bans any token that would repeat an n-gram of `ids`. */
  readonly noRepeatNgramSize: number;
  /** min_length: the end tokens are banned while `ids` (start token included) is shorter. */
  readonly minLength: number;
  /** min_new_tokens: the end tokens are banned while fewer tokens than this were generated. */
  readonly minNewTokens: number;
}

export const NO_SCORE_RULES: ScoreRules = { eosIds: [], repetitionPenalty: 1, noRepeatNgramSize: 0, minLength: 0, minNewTokens: 0 };

/** Applies the rules to one row of scores (logits for greedy, log-probabilities for beam search, as transformers does), in place. */
export function applyScoreRules(scores: Float64Array, ids: readonly number[], rules: ScoreRules): void {
  const p = rules.repetitionPenalty;
  if (p !== 1) {
    // Each distinct token once: a score that would be raised twice for two occurrences is not.
    for (const id of new Set(ids)) {
      if (id < 0 || id >= scores.length) continue;
      const s = scores[id]!;
      scores[id] = s < 0 ? s * p : s / p;
    }
  }
  for (const id of bannedByNgrams(ids, rules.noRepeatNgramSize)) if (id >= 0 && id < scores.length) scores[id] = -Infinity;
  if (ids.length < rules.minLength || ids.length - 1 < rules.minNewTokens) {
    for (const id of rules.eosIds) if (id >= 0 && id < scores.length) scores[id] = -Infinity;
  }
}

/**
 * Tokens that would complete an n-gram already in `ids`: those that followed an earlier
 * occurrence of the last n − 1 tokens. Nothing is banned before the sequence can hold an n-gram.
 */
export function bannedByNgrams(ids: readonly number[], n: number): Set<number> {
  const banned = new Set<number>();
  if (n <= 0 || ids.length + 1 < n) return banned;
  const tail = ids.length - (n - 1);
  for (let start = 0; start + n <= ids.length; start++) {
    let same = true;
    for (let k = 0; k < n - 1 && same; k++) same = ids[start + k] === ids[tail + k];
    if (same) banned.add(ids[start + n - 1]!);
  }
  return banned;
}
