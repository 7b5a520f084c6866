"""Topic bindings, matched as RabbitMQ matches them: keys are words separated by dots (a word may be
empty), a binding's `*` stands for exactly one word and `#` for zero or more.

The bindings of one exchange form a trie by word, so a publish is matched by walking the words of its
routing key once, branching only at `*` and `#`, rather than by testing every binding.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

D = TypeVar("D", bound=Hashable)
ONE_WORD = "*"
ANY_WORDS = "#"


def words(key: str) -> list[str]:
    """A routing or binding key's words ("" is one empty word)."""
    return key.split(".")


@dataclass
class _Node(Generic[D]):
    children: dict[str, _Node[D]] = field(default_factory=dict)
    destinations: dict[D, int] = field(default_factory=dict)  # destination -> bindings ending here


class TopicTrie(Generic[D]):
    """The topic bindings of one exchange: binding key -> destinations (a destination bound twice with
    one key counts twice, and needs two unbinds)."""

    def __init__(self) -> None:
        self._root: _Node[D] = _Node()

    def bind(self, key: str, destination: D) -> None:
        """Add a binding of `destination` with binding key `key`."""
        node = self._root
        for word in words(key):
            node = node.children.setdefault(word, _Node())
        node.destinations[destination] = node.destinations.get(destination, 0) + 1

    def unbind(self, key: str, destination: D) -> bool:
        """Remove one binding of `destination` with `key`; False when there is none. Branches left empty
        are pruned."""
        path = [self._root]
        for word in words(key):
            child = path[-1].children.get(word)
            if child is None:
                return False
            path.append(child)
        count = path[-1].destinations.get(destination, 0)
        if count == 0:
            return False
        if count == 1:
            del path[-1].destinations[destination]
        else:
            path[-1].destinations[destination] = count - 1
        for parent, word, child in zip(
            reversed(path[:-1]), reversed(words(key)), reversed(path[1:]), strict=True
        ):
            if child.children or child.destinations:
                break
            del parent.children[word]
        return True

    @property
    def empty(self) -> bool:
        """Whether no binding is left (and so, with the pruning, no node but the root)."""
        return not self._root.children and not self._root.destinations

    def match(self, routing_key: str) -> set[D]:
        """Every destination with a binding whose key matches `routing_key`."""
        found: set[D] = set()
        key = words(routing_key)
        seen: set[tuple[int, int]] = set()  # (node, position) pairs walked: `#` reaches some twice
        pending: list[tuple[_Node[D], int]] = [(self._root, 0)]
        while pending:
            node, at = pending.pop()
            if (id(node), at) in seen:
                continue
            seen.add((id(node), at))
            anything = node.children.get(ANY_WORDS)
            if anything is not None:  # `#` takes zero words, or any number of them
                pending.extend((anything, skip) for skip in range(at, len(key) + 1))
            if at == len(key):
                found.update(node.destinations)
                continue
            for word in (key[at], ONE_WORD):
                child = node.children.get(word)
                if child is not None:
                    pending.append((child, at + 1))
        return found
