"""A word-level LSTM language model trained with a BucketingModule on Python's own docstrings.

The text is English that every Python installation carries: the docstrings of
a fixed list of standard-library modules (and of their public classes,
methods and functions), split into sentences, lowercased and cut into words.
Words outside the most frequent ``--vocab-size`` become ``<unk>``; every tenth
sentence is held out for validation. The same Python version gives the same
corpus, run after run.

``BucketSentenceIter`` groups the sentences by length into buckets and pads
each to its bucket's length. For each bucket ``sym_gen`` unrolls a stack of
LSTM cells (``mx.rnn.SequentialRNNCell`` of ``mx.rnn.LSTMCell``) over that
many steps; the BucketingModule binds one executor per bucket, all sharing one
set of parameters. Training shows the perplexity falling (rebind's progress
plugin draws a bar on a terminal, one line per epoch otherwise). At the end
the module is saved with ``save_checkpoint``, loaded back with
``BucketingModule.load`` and the same ``sym_gen``, and scores the validation
set with the same perplexity. This is MXNet's
``example/rnn/bucketing/lstm_bucketing.py`` with a different corpus; the
script runs unchanged on MXNet 1.9 with ``import mxnet as mx``.

    python examples/lstm_bucketing.py [--num-epochs 6] [--max-sentences 2000]
"""

import argparse
import importlib
import inspect
import os
import random
import re
import tempfile
from collections import Counter

import numpy as np

import rebind as mx

# Imported for their docstrings; modules a Python build may lack (tkinter) are left out.
STDLIB_MODULES = (
    "abc argparse ast asyncio base64 bisect calendar collections configparser contextlib "
    "copy csv dataclasses datetime decimal difflib email enum fractions functools gettext "
    "glob gzip hashlib heapq hmac html http.client imaplib inspect io ipaddress itertools "
    "json logging mailbox math multiprocessing numbers operator optparse os pathlib pickle "
    "pkgutil platform plistlib poplib pprint queue random re sched secrets selectors shelve "
    "shlex shutil smtplib socket statistics string struct subprocess tarfile tempfile "
    "textwrap threading timeit tokenize trace traceback typing unittest urllib.parse "
    "urllib.request uuid warnings wave weakref xml.dom.minidom xml.etree.ElementTree zipfile"
).split()
BUCKETS = [5, 10, 15, 20, 30, 40]
MAX_WORDS = max(BUCKETS)  # the corpus leaves out longer sentences
INVALID_LABEL = 0  # padding, and the label after a sentence's last word
START_LABEL = 1
UNKNOWN = "<unk>"


# -- the corpus ---------------------------------------------------------------------------
def stdlib_docstrings():
    """The docstrings of STDLIB_MODULES and their public members, each once, in a fixed order."""
    seen, docs = set(), []

    def add(obj):
        doc = inspect.getdoc(obj)
        if doc and doc not in seen:
            seen.add(doc)
            docs.append(doc)

    for name in STDLIB_MODULES:
        module = importlib.import_module(name)
        add(module)
        for attr, obj in sorted(vars(module).items()):
            if attr.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            add(obj)
            if inspect.isclass(obj):
                for method_name, method in sorted(vars(obj).items()):
                    if not method_name.startswith("_") and inspect.isfunction(method):
                        add(method)
    return docs


def split_sentences(docs, min_words=3, max_words=MAX_WORDS):
    """Lowercased word lists of the sentences of ``docs``, each distinct sentence once."""
    sentences, seen = [], set()
    for paragraph in re.split(r"\n\s*\n", "\n\n".join(docs)):
        prose = " ".join(
            line for line in paragraph.splitlines() if not line.lstrip().startswith((">>>", "..."))
        )
        for sentence in re.split(r"(?<=[.!?])\s+", prose):
            words = tuple(re.findall(r"[a-z]+(?:'[a-z]+)?", sentence.lower()))
            if min_words <= len(words) <= max_words and words not in seen:
                seen.add(words)
                sentences.append(list(words))
    return sentences


def encoded_corpus(vocab_size, max_sentences=None):
    """``(train, validation, vocab)``: encoded sentences, rare words as ``<unk>``."""
    sentences = split_sentences(stdlib_docstrings())[:max_sentences]
    train = [s for i, s in enumerate(sentences) if i % 10 != 9]
    validation = [s for i, s in enumerate(sentences) if i % 10 == 9]
    counts = Counter(word for sentence in train for word in sentence)
    # vocab_size - 2 words: the padding and <unk> take the other two indices
    kept = {word for word, _ in counts.most_common(vocab_size - 2)}
    train, validation = (
        [[word if word in kept else UNKNOWN for word in sentence] for sentence in part]
        for part in (train, validation)
    )
    train, vocab = mx.rnn.encode_sentences(
        train, invalid_label=INVALID_LABEL, start_label=START_LABEL
    )
    vocab.setdefault(UNKNOWN, max(vocab.values()) + 1)
    # every validation word is in the vocabulary now: encoding it adds nothing
    validation, _ = mx.rnn.encode_sentences(validation, vocab=vocab, invalid_label=INVALID_LABEL)
    return train, validation, vocab


# -- the model ----------------------------------------------------------------------------
def make_sym_gen(vocab_size, num_embed, num_hidden, num_layers):
    """``sym_gen(seq_len)``: the language model unrolled over ``seq_len`` words."""
    stack = mx.rnn.SequentialRNNCell()
    for layer in range(num_layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=num_hidden, prefix=f"lstm_l{layer}_"))

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(
            data=data, input_dim=vocab_size, output_dim=num_embed, name="embed"
        )
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, num_hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=vocab_size, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        # padding positions give no gradient
        pred = mx.sym.SoftmaxOutput(
            data=pred,
            label=label,
            name="softmax",
            use_ignore=True,
            ignore_label=INVALID_LABEL,
        )
        return pred, ("data",), ("softmax_label",)

    return sym_gen


def whole_batches(sentences, batch_size):
    """The sentences that fill whole batches of their buckets (in order), the rest dropped.

    BucketSentenceIter scores only whole batches and reshuffles at every reset,
    so with a remainder each pass over the validation set would score other
    sentences. Without one, every pass scores all of them.
    """
    by_bucket = {}
    for sentence in sentences:
        fitting = [b for b in BUCKETS if b >= len(sentence)]
        if fitting:
            by_bucket.setdefault(fitting[0], []).append(sentence)
    kept = []
    for members in by_bucket.values():
        kept.extend(members[: len(members) // batch_size * batch_size])
    return kept


def perplexity():
    """The metric: perplexity over the real words, padding left out."""
    return mx.metric.Perplexity(ignore_label=INVALID_LABEL)


def score(module, val):
    """Validation perplexity over one pass of ``val`` (reset first, which reshuffles)."""
    return dict(module.score(val, perplexity()))["perplexity"]


def score_fixed(module, make_val, seed):
    """Validation perplexity over a fresh iterator whose order ``seed`` fixes.

    BucketSentenceIter reshuffles at every reset, each time from the order the
    last shuffle left (with Python's ``random`` and NumPy's global generator,
    as in MXNet): a fresh iterator after seeding both makes two calls sum the
    same batches in the same order, so equal models score exactly equal.
    """
    random.seed(seed)
    np.random.seed(seed)
    return score(module, make_val())


def untrained_perplexity(sym_gen, val, initializer):
    """The validation perplexity of a freshly initialized model: the level to fall from."""
    module = mx.mod.BucketingModule(
        sym_gen, default_bucket_key=val.default_bucket_key, context=mx.cpu()
    )
    module.bind(data_shapes=val.provide_data, label_shapes=val.provide_label, for_training=False)
    module.init_params(initializer)
    return score(module, val)


def reload_and_score(prefix, epoch, sym_gen, make_val, seed):
    """A new BucketingModule from the checkpoint, bound for inference, scored again."""
    val = make_val()
    module = mx.mod.BucketingModule.load(
        prefix, epoch, sym_gen=sym_gen, default_bucket_key=val.default_bucket_key, context=mx.cpu()
    )
    module.bind(data_shapes=val.provide_data, label_shapes=val.provide_label, for_training=False)
    return score_fixed(module, make_val, seed)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-hidden", type=int, default=128)
    parser.add_argument("--num-embed", type=int, default=64)
    parser.add_argument("--num-layers", type=int, default=2)
    parser.add_argument("--vocab-size", type=int, default=3000)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--max-sentences", type=int, help="use only the first N sentences (a quick run)"
    )
    parser.add_argument(
        "--checkpoint-dir", help="where the checkpoints go (default: a temporary folder)"
    )
    return parser.parse_args()


def main():
    args = parse_args()
    mx.random.seed(args.seed)
    random.seed(args.seed)  # BucketSentenceIter's batch order (MXNet's and rebind's)
    np.random.seed(args.seed)  # and its sentence order within buckets

    train_sentences, val_sentences, vocab = encoded_corpus(args.vocab_size, args.max_sentences)
    val_sentences = whole_batches(val_sentences, args.batch_size)
    if not val_sentences:
        raise SystemExit(
            f"--max-sentences {args.max_sentences} leaves no whole validation batch of "
            f"{args.batch_size}; give more sentences or a smaller --batch-size"
        )
    words = sum(map(len, train_sentences))
    print(
        f"corpus: {len(train_sentences)} training sentences ({words} words), "
        f"{len(val_sentences)} validation sentences, vocabulary {len(vocab)}"
    )
    train = mx.rnn.BucketSentenceIter(
        train_sentences, args.batch_size, buckets=BUCKETS, invalid_label=INVALID_LABEL
    )

    def make_val():
        return mx.rnn.BucketSentenceIter(
            val_sentences, args.batch_size, buckets=BUCKETS, invalid_label=INVALID_LABEL
        )

    val = make_val()
    sym_gen = make_sym_gen(len(vocab), args.num_embed, args.num_hidden, args.num_layers)
    module = mx.mod.BucketingModule(
        sym_gen, default_bucket_key=train.default_bucket_key, context=mx.cpu()
    )
    initializer = mx.init.Xavier(factor_type="in", magnitude=2.34)
    before = untrained_perplexity(sym_gen, val, initializer)
    print(f"Validation perplexity before training: {before:.4f}", flush=True)

    with tempfile.TemporaryDirectory() as scratch:
        folder = args.checkpoint_dir or scratch
        os.makedirs(folder, exist_ok=True)
        prefix = os.path.join(folder, "lstm_bucketing")
        module.fit(
            train,
            eval_data=val,
            eval_metric=perplexity(),
            validation_metric=perplexity(),  # its own object: scoring resets the metric
            initializer=initializer,
            optimizer="sgd",
            optimizer_params={
                "learning_rate": args.lr,
                "momentum": 0.9,
                "wd": 1e-5,
                "clip_gradient": 5.0,
            },
            num_epoch=args.num_epochs,
            epoch_end_callback=mx.callback.do_checkpoint(prefix),
        )
        trained = score_fixed(module, make_val, args.seed)
        print(f"Validation perplexity: {trained:.4f}")
        # the bucket symbols and keys too, which BucketingModule.load needs
        module.save_checkpoint(prefix, args.num_epochs)
        reloaded = reload_and_score(prefix, args.num_epochs, sym_gen, make_val, args.seed)
        print(f"reloaded from {prefix}-{args.num_epochs:04d}.params: perplexity {reloaded:.4f}")


if __name__ == "__main__":
    main()
