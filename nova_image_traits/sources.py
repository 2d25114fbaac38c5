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
"""The image properties a derived requirement comes from, found when read.

nova says what a boot asks, not why. Finding out asks nova again once per
image property (:mod:`nova_image_traits.attribution`), and nova's request
filters log as they run (``transform_image_metadata`` an ERROR for each
ask of an image with ``hw_viommu_model``). So the derivation
(:mod:`nova_image_traits.boot_requirements`) gives each requirement
:class:`Sources` that are worked out only when first read: by the reason
of a refusal (:mod:`nova_image_traits.reasons`) or by the command line.
An accepted rebuild asks nova once. This module imports nothing from
nova.
"""

import collections.abc
import threading


class Attribution:
    """The sources of several requirements, found together when first read.

    :param find: a callable returning ``{key: sources}``; called once, on
        the first read, and then dropped (it holds nova's objects)
    """

    def __init__(self, find):
        self._find = find
        self._found = None
        self._lock = threading.Lock()

    @property
    def done(self):
        """Whether the sources were found, without finding them."""
        return self._found is not None

    def __call__(self):
        with self._lock:
            if self._found is None:
                self._found, self._find = dict(self._find()), None
        return self._found


class Sources(collections.abc.Sequence):
    """The sources of one requirement, a tuple found on first read.

    :param attribution: the :class:`Attribution` shared by the
        requirements of one image
    :param key: this requirement's key in it
    """

    def __init__(self, attribution, key):
        self._attribution = attribution
        self._key = key

    @property
    def known(self):
        """Whether they were found, without finding them."""
        return self._attribution.done

    def _found(self):
        return tuple(self._attribution().get(self._key, ()))

    def __getitem__(self, index):
        return self._found()[index]

    def __len__(self):
        return len(self._found())

    def __eq__(self, other):
        if not isinstance(other, collections.abc.Sequence):
            return NotImplemented
        return self._found() == tuple(other)

    def __hash__(self):
        return hash(self._found())

    def __repr__(self):
        return repr(self._found()) if self.known else '<not attributed>'
