"""berds_core.lab.mace: MACE (Hovy et al. 2013) with the class prevalence estimated, checked against
crowd-kit's MACE on the paper's model and against simulated annotators of known competence."""
import numpy as np
import pandas as pd
import pytest

from berds_core.lab.mace import MaceOptions, fit


def _simulate(theta, n_items, positive, seed, constant=(), per_item=3):
    """MACE's generative story: annotator j knows the truth with probability theta[j], else spams (uniformly,
    or always answers 1 when j is in ``constant``); each item labelled by ``per_item`` annotators."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(n_items) < positive).astype(int)
    rows = []
    for i in range(n_items):
        for j in rng.choice(len(theta), per_item, replace=False):
            if j in constant:
                y = 1 if rng.random() >= theta[j] else int(truth[i])
            else:
                y = int(truth[i]) if rng.random() < theta[j] else int(rng.random() < 0.5)
            rows.append((i, j, y))
    return np.array(rows), truth


def _fit(rows, n_items, n_ann, **kw):
    return fit(rows[:, 0], rows[:, 1], rows[:, 2], n_items=n_items, n_annotators=n_ann, options=MaceOptions(**kw))


def test_with_the_papers_uniform_prior_it_agrees_with_crowd_kits_mace():
    from crowdkit.aggregation import MACE

    theta = [0.9, 0.7, 0.4, 0.0, 0.0]
    rows, _ = _simulate(theta, 500, 0.5, seed=1, constant=(4,))
    ours = _fit(rows, 500, 5, prior="uniform")
    # crowd-kit wants annotator codes whose order of appearance is their sorted order
    df = pd.DataFrame({"task": [f"t{i:04d}" for i in rows[:, 0]], "worker": [f"w{j}" for j in rows[:, 1]],
                       "label": rows[:, 2]}).sort_values("worker", kind="stable").reset_index(drop=True)
    theirs = MACE(n_restarts=1, n_iter=200, method="vb", random_state=0).fit(df)
    assert np.allclose(ours.theta, theirs.spamming_[:, 1], atol=0.01)
    assert ours.theta[3] < 0.1 and ours.theta[4] < 0.01  # the paper's point: both spammers near 0
    assert np.allclose(ours.prevalence, [0.5, 0.5])  # uniform: not learned


@pytest.mark.parametrize("positive", [0.5, 0.21])
def test_competence_and_prevalence_are_recovered_on_many_items(positive):
    theta = [0.9, 0.7, 0.4, 0.0, 0.0]
    # every annotator labels every item, so the truth is well determined and the estimate must be close
    rows, truth = _simulate(theta, 2000, positive, seed=2, constant=(4,), per_item=5)
    got = _fit(rows, 2000, 5)
    assert np.allclose(got.theta, theta, atol=0.04), got.theta
    assert got.prevalence[1] == pytest.approx(truth.mean(), abs=0.02)
    assert (got.posterior.argmax(axis=1) == truth).mean() > 0.9  # two of five spam: not every item is knowable


def test_the_learned_prevalence_is_what_keeps_an_accurate_annotator_high_when_most_answers_are_no():
    # the reason the module exists: with a fifth of the items positive, the paper's uniform prior explains an
    # accurate annotator's many 0s as spam
    theta = [0.95, 0.75, 0.5, 0.0]
    rows, truth = _simulate(theta, 400, 0.21, seed=0)
    uniform = _fit(rows, 400, 4, prior="uniform")
    learned = _fit(rows, 400, 4)
    assert uniform.theta[0] < 0.7 < learned.theta[0]
    assert learned.theta[0] > learned.theta[1] > learned.theta[2] > learned.theta[3]
    assert (learned.posterior.argmax(1) == truth).mean() > (uniform.posterior.argmax(1) == truth).mean()


def test_em_and_vb_agree_on_the_order_and_the_fit_is_deterministic():
    rows, _ = _simulate([0.9, 0.6, 0.3, 0.0], 300, 0.3, seed=5)
    em = _fit(rows, 300, 4, method="em")
    vb = _fit(rows, 300, 4, method="vb")
    assert list(np.argsort(-em.theta)) == list(np.argsort(-vb.theta)) == [0, 1, 2, 3]
    again = _fit(rows, 300, 4, method="vb")
    assert np.array_equal(vb.theta, again.theta) and vb.log_likelihood == again.log_likelihood
    assert np.allclose(vb.posterior.sum(axis=1), 1.0) and np.allclose(em.xi.sum(axis=1), 1.0)
    assert np.all(vb.xi.sum(axis=1) <= 1.0)  # MACE's variational strategy: exp(E[log xi]), below a distribution


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(ValueError, match="method"):
        fit([0], [0], [0], n_items=1, n_annotators=1, options=MaceOptions(method="gibbs"))
    with pytest.raises(ValueError, match="prior"):
        fit([0], [0], [0], n_items=1, n_annotators=1, options=MaceOptions(prior="flat"))
    with pytest.raises(ValueError, match="codes 0..1"):
        fit([0], [0], [2], n_items=1, n_annotators=1)
    with pytest.raises(ValueError, match="at least one row"):
        fit([], [], [], n_items=0, n_annotators=0)
