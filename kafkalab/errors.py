"""The one error type the CLI turns into a single line and exit code 2, and the one line a Kafka error is shown as."""


class KafkalabError(Exception):
    """A problem the user can fix: the message names what is wrong and what to do."""

    exit_code = 2


def short_error(exc: BaseException) -> str:
    """The first line of a Kafka error's text (a KafkaException holds a KafkaError whose ``str()`` says it)."""
    err = exc.args[0] if exc.args else exc
    text = getattr(err, "str", lambda: str(err))()
    return text.splitlines()[0] if text else type(exc).__name__


def unreachable(bootstrap: str, exc: BaseException) -> KafkalabError:
    """The one line for a cluster that does not answer, whichever command asked."""
    return KafkalabError(f"cannot reach the Kafka cluster at {bootstrap} ({short_error(exc)}): start it "
                         "(`kafkalab cluster up`) or name the right one (--state-dir, --bootstrap)")
