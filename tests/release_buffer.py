"""A NumPy transcription of the minimax release's PLR buffer (`util/rl/plr.py`: `_get_replay_dist`,
`_get_next_insert_idx`, `dedupe_levels`, `update`), one level at a time as it is written, for the
tests to compare `locate` + `offer` against. Levels are integer ids; `ids_equal` is the release's
comparator. Written from the release's semantics, not from our code."""

import numpy as np


def replay_dist(scores, ages, filled, temp, rho):
    """The release's P_replay: ordinal ranks (stable argsort of -scores, -inf on empty slots)."""
    k = len(scores)
    order = np.argsort(-np.where(filled, scores, -np.inf), kind="stable")
    ranks = np.zeros(k)
    ranks[order] = 1.0 / (1 + np.arange(k))
    s = (ranks * filled) ** (1.0 / temp)
    z = s.sum()
    s = s / z if z > 0 else filled * 1.0
    a = ages * filled
    stale = a / a.sum() if a.sum() > 0 else s
    return (1 - rho) * s + rho * stale


def dedupe(buffer_ids, buffer_filled, ids, level_idxs):
    """`(level_idxs, dupe_mask)`: a later copy of a level in the batch is a dupe; a level equal to
    a stored one takes that slot (first match)."""
    n = len(ids)
    level_idxs = np.array(level_idxs)
    dupe = np.zeros(n, bool)
    for i in range(n):
        matches = [j for j in range(n) if ids[j] == ids[i]]
        if len(matches) > 1 and matches[0] < i:
            dupe[i] = True
        stored = [j for j in range(len(buffer_ids)) if buffer_filled[j] and buffer_ids[j] == ids[i]]
        if stored:
            level_idxs[i] = stored[0]
    return level_idxs, dupe


def update(buf, ids, level_idxs, scores, done, max_returns, new_mutations, temp, rho):
    """The release's `update`, sequential. `buf`: dict of numpy arrays ids, scores (-inf empty),
    ages, filled, max_returns, n_mutations (changed in place and returned). `new_mutations[i]` is
    the count a newcomer stores (the release: parent's + 1 for a child, 0 for a new level)."""
    k = len(buf["scores"])
    cur_mut = buf["n_mutations"].copy()
    insert_mask = np.zeros(k, bool)
    for i in range(len(ids)):
        filled_count = int(buf["filled"].sum())
        nxt = filled_count if filled_count < k else int(np.argmin(replay_dist(
            buf["scores"], buf["ages"], buf["filled"], temp, rho)))
        is_new = level_idxs[i] < 0
        idx = nxt if is_new else int(level_idxs[i])
        should_insert = scores[i] >= buf["scores"][idx] and done[i]
        is_existing = (not is_new) and done[i]
        should_update = is_existing and not insert_mask[idx]
        should_insert = should_insert and not should_update
        if should_insert:
            insert_mask[idx] = True
        if should_insert or should_update:
            buf["max_returns"][idx] = max_returns[i]
            buf["scores"][idx] = scores[i]
        if should_insert:
            buf["ids"][idx] = ids[i]
            buf["filled"][idx] = True
            buf["n_mutations"][idx] = new_mutations[i] if is_new else cur_mut[idx]
    return buf
