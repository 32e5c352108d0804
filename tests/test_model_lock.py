"""Loading models in two threads at once: transformers' from_pretrained patches process-wide state
(weight tying and initialisation switched off) while it runs, so every model the engine loads goes
through one lock. Without it the copy LM below, loaded while the app's embedder loads in another
thread, comes out untied (a uniform output distribution) or fails with a meta-tensor error."""
import threading

from berds_core.answers import perspective_diversity
from berds_core.embeddings.models import load_embedder
from berds_core.generators.hf import HFGenerator
from tiny_models import make_tiny_copy_lm

PA = "free speech is good for people and science"


def test_a_generator_loaded_while_an_embedder_loads_elsewhere_is_whole(tmp_path):
    path = make_tiny_copy_lm(tmp_path)
    stop, errors, loads = threading.Event(), [], [0]

    def keep_loading():  # the warm-up thread: the default embedder, loaded again and again
        try:
            while not stop.is_set():
                load_embedder.__wrapped__(None, "cpu")
                loads[0] += 1
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    worker = threading.Thread(target=keep_loading, daemon=True)
    worker.start()
    try:
        for _ in range(30):
            gen = HFGenerator(str(path), device="cpu")
            res = perspective_diversity(gen, ["the war was about money and tax in the country",
                                              f"the war was about money and tax . {PA} ."], [[PA], [PA]])
            m = gen.model
            assert m.lm_head.weight.data_ptr() == m.transformer.wte.weight.data_ptr()  # tied, as saved
            assert res[1]["pd_sum"] < 0.5 * res[0]["pd_sum"]  # the copy LM works: stating the answer helps
    finally:
        stop.set()
        worker.join(60)
    assert not errors, errors
    assert loads[0] >= 1
