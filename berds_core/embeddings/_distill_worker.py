"""Run by ``berds_core.embeddings.static.distill`` under the distillation environment's interpreter (model2vec
with ``transformers<5.4``; it imports nothing of the studio): ``python _distill_worker.py SOURCE OUT DIMS``.
Writes the static model to OUT and prints one JSON line: the versions it ran with."""
import json
import sys


def main() -> None:
    # imported here: the studio's own environment has none of model2vec[distill] (the app imports every engine
    # module at start-up, and a module that fails to import for want of an optional library is left out)
    import model2vec
    import sklearn
    import torch
    import transformers
    from model2vec.distill import distill

    source, out, dims = sys.argv[1], sys.argv[2], int(sys.argv[3])
    torch.manual_seed(0)
    model = distill(model_name=source, pca_dims=dims)
    model.save_pretrained(out)
    print(json.dumps({"model2vec": model2vec.__version__, "transformers": transformers.__version__,
                      "torch": torch.__version__, "scikit_learn": sklearn.__version__}))


if __name__ == "__main__":
    main()
