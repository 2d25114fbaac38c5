# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Provider traits known at a provider generation.

Placement increments a resource provider's generation whenever its traits
change (``_set_traits``), as well as its inventory and the allocations
against it, and calls the generation "a consistent view marker".
``GET /resource_providers/{uuid}/traits`` answers with the traits and the
generation they are at; ``GET /allocations/{consumer}`` answers with the
current generation of every provider the consumer holds, read with the
allocations.

So the traits placement gave at generation ``G`` are the provider's traits
for as long as an answer of placement's says the provider is at ``G``.
This rests on one more detail of placement's: its traits handler reads
the provider (and its generation) before the traits, so a change between
the two reads pairs new traits with the old generation, which the next
allocations answer no longer names, and never old traits with the new
one.

:class:`KnownTraits` keeps, per placement client (one per process and
``[placement]`` settings), the last traits answer of each provider; the
pre-check, which reads the server's allocations anyway, asks for a
provider's traits again only when its generation moved
(:meth:`.prefetch.PrefetchingClient.prefetch_traits`). Nothing is trusted
on age alone: an answer is used only when placement has just named its
generation, and never :data:`MAX_AGE` seconds after it arrived. That
bound, and forgetting a provider whose traits placement no longer finds
(``404``), are what keep a provider deleted and created again under the
same UUID (an ironic node enrolled again, a provider an operator
deleted), whose generation starts over, from being answered with the old
provider's traits: a heuristic, not a guarantee, for a provider created
again and brought to the same generation within that time.

The saving has a price when the generation moved: the traits are then
asked only after the allocations answered, not beside them. Any change on
the node moves it, an allocation included, so on a host where servers are
created and deleted all the time the pre-check often waits for two
requests in a row.
"""

import collections
import sys
import threading
import time

#: Providers whose traits are kept, per placement client. Trait names are
#: shared between providers (interned), so each costs its tuple: about 8
#: bytes a trait, under 1 KiB for a compute node's usual 50-100 traits.
MAX_PROVIDERS = 4096
#: Seconds a traits answer may be used for, however its generation holds.
MAX_AGE = 300.0


class KnownAnswer:
    """A traits answer placement gave, given again without a request.

    It reads as the response it stands for does (``status_code``,
    ``json()``), and says that it was not sent (:attr:`known`).
    """

    status_code = 200
    reason = 'OK'
    #: Answered from :class:`KnownTraits`, not by placement now.
    known = True

    def __init__(self, traits, generation):
        self._traits = traits
        self._generation = generation

    def json(self):
        return {'traits': list(self._traits),
                'resource_provider_generation': self._generation}


class KnownTraits:
    """The last traits answer of each provider, and its generation."""

    def __init__(self, size=MAX_PROVIDERS, max_age=MAX_AGE,
                 clock=time.monotonic):
        self.size = size
        self.max_age = max_age
        self._clock = clock
        self._lock = threading.Lock()
        self._known = collections.OrderedDict()

    def remember(self, rp_uuid, response):
        """Keep a traits answer of placement's; return ``response``.

        Only a ``200`` whose body names its traits and its generation is
        kept, and a ``404`` (no such provider) forgets what was kept; the
        response is passed on untouched, for the decision to read as it
        would have.
        """
        try:
            if response.status_code == 404:
                with self._lock:
                    self._known.pop(rp_uuid, None)
            if response.status_code != 200:
                return response
            body = response.json()
            traits = body['traits']
            generation = body['resource_provider_generation']
        except Exception:
            return response
        if (not isinstance(traits, list) or
                not all(isinstance(t, str) for t in traits) or
                not isinstance(generation, int) or
                isinstance(generation, bool)):
            return response
        with self._lock:
            # NOTE(nova-image-traits): the last answer to arrive wins, even
            # one of a lower generation (two decisions' answers crossing):
            # that costs one request at most, while keeping the highest
            # would be wrong for a provider created again, whose generation
            # starts over.
            self._known[rp_uuid] = (
                generation, tuple(sys.intern(t) for t in traits),
                self._clock())
            self._known.move_to_end(rp_uuid)
            while len(self._known) > self.size:
                self._known.popitem(last=False)
        return response

    def knows(self, rp_uuid):
        """Whether a usable answer about ``rp_uuid`` is kept at all."""
        return self._entry(rp_uuid) is not None

    def answer(self, rp_uuid, generation):
        """The kept answer, if ``rp_uuid`` is still at ``generation``.

        :param generation: the generation placement just gave for the
            provider, or None when it gave none
        :returns: a :class:`KnownAnswer`, or None (ask placement)
        """
        entry = self._entry(rp_uuid)
        if entry is None or generation is None or entry[0] != generation:
            return None
        return KnownAnswer(entry[1], entry[0])

    def forget(self):
        """Forget every answer (for tests)."""
        with self._lock:
            self._known.clear()

    def _entry(self, rp_uuid):
        with self._lock:
            entry = self._known.get(rp_uuid)
            if entry is not None and self._clock() - entry[2] > self.max_age:
                del self._known[rp_uuid]
                entry = None
        return entry


def held_generation(response, rp_uuid):
    """The generation ``GET /allocations/{consumer}`` gives ``rp_uuid``.

    :param response: that request's response
    :returns: an int, or None when the answer names none for it (an error,
        or the consumer holds nothing on the provider)
    """
    try:
        if response.status_code != 200:
            return None
        generation = response.json()['allocations'][rp_uuid]['generation']
    except Exception:
        return None
    if isinstance(generation, int) and not isinstance(generation, bool):
        return generation
    return None
