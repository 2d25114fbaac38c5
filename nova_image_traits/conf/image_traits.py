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

from oslo_config import cfg

from nova_image_traits.conf import precheck


GROUP = cfg.OptGroup(
    'image_traits',
    title='Image traits on rebuild',
    help="""
Options of nova-image-traits, which decides whether a server rebuilt with a
new image may stay on its current host when the new image requires traits
(image properties ``trait:<NAME>=required``).

Nova does not ask placement for allocation candidates on rebuild, so the
scheduler cannot check the new image's traits the way it does at boot. The
strategy chosen here makes that decision instead, in the
``ImageTraitsFilter`` scheduler filter and, when the conductor runs with
the rebuild hook (``nova-image-traits-conductor``), in place of nova's
built-in check.
""")

_STRATEGY_CHOICES = [
    ('held_providers', "Placement's boot rule on the providers the server "
                       "holds: each trait must be on a provider that "
                       "serves the server's unsuffixed request group "
                       "(the compute node, a NUMA node or pGPU serving an "
                       "unsuffixed resource, a sharing disk pool). "
                       "Capacity plays no part. Two requests, one more per "
                       "further provider of that group."),
    ('reject', 'Refuse a rebuild whose new image requires a trait that '
               'neither the current image nor the flavor required. Makes '
               'no placement request for traits.'),
    ('root_traits', 'Compare with the traits of the compute node root '
                    'provider. One placement request.'),
    ('tree_traits', 'Compare with the union of the traits of every '
                    'provider in the compute node tree. One request, two '
                    'when the root lacks a trait.'),
    ('in_tree_candidates', 'Ask GET /allocation_candidates restricted to '
                           'the compute node tree whether a new boot could '
                           'land on the providers the server holds. '
                           'Inconclusive when they have no room for it. '
                           'Needs placement microversion 1.31. Two '
                           'requests, three when no candidate fits.'),
    ('allocation_traits', "Nova's own rule: the union of the traits of "
                          "the providers that hold the server's "
                          "allocations, read fresh. One request plus one "
                          "per allocated provider still needed."),
]

#: The strategies this package ships, in the order the docs present them.
STRATEGIES = tuple(name for name, _help in _STRATEGY_CHOICES)

ALL_OPTS = [
    cfg.StrOpt(
        'strategy',
        default='held_providers',
        choices=_STRATEGY_CHOICES,
        help="""
How to decide whether the current host satisfies the traits that the new
image requires on rebuild.

A rebuild keeps the server's allocations, so the rebuilt server uses the
resource providers it holds now. The default, ``held_providers``, applies
placement's boot rule for image traits to those providers: each trait must
be on a provider that serves the server's unsuffixed request group (where
nova puts image traits at boot). Providers the server does not hold, and
providers that serve only numbered request groups, do not count, and free
capacity plays no part. It is inconclusive when none of the server's
allocations is on this compute node (a server in ERROR after a failed
move), or when the ways they could split between the request groups
disagree; then ``fallback_strategy`` decides.

Whatever the strategy, a new image that needs more of a resource class
than the flavor (``hw_mem_encryption``, a change of CPU policy) is first
checked against what the server holds, with one
``GET /allocations/{server}``; when that cannot be told, the rebuild is
refused without asking ``fallback_strategy``.

Strategies are loaded with stevedore from the entry point namespace
``nova_image_traits.strategies``.
"""),
    cfg.StrOpt(
        'fallback_strategy',
        default='root_traits',
        choices=_STRATEGY_CHOICES,
        help="""
The strategy that decides when ``strategy`` is inconclusive.
``held_providers`` is inconclusive when none of the server's allocations
is on this compute node, or the ways they could split between the request
groups disagree;
``in_tree_candidates`` when the providers the server holds have no room for
another boot of its flavor (placement then returns no candidate with or
without the traits), when its disk comes from a sharing provider, and when
placement is older than microversion 1.31; ``allocation_traits`` when
placement holds no allocations.

The default, ``root_traits``, judges the compute node's own traits and
costs one request. If the fallback is inconclusive too, the rebuild is
refused.
"""),
    cfg.StrOpt(
        'on_placement_error',
        default='reject',
        choices=[
            ('reject', 'Fail closed: refuse the rebuild, the server keeps '
                       'its current image.'),
            ('accept', 'Fail open: let the rebuild go ahead unchecked.'),
        ],
        help="""
What to do when placement cannot answer: it is unreachable, times out,
answers with an error or a malformed body, does not know the compute node, or
does not support a microversion the strategy needs. The decision log line and
the user-facing reason name the cause either way.
"""),
    cfg.FloatOpt(
        'decision_timeout',
        default=20.0,
        min=0.1,
        help="""
Upper bound, in seconds, on the time one decision may spend waiting for
placement: building the client, the version document, a Keystone token
fetch, waiting for one of the 10 connections of the process, keystoneauth's
retries and every request. Each request's timeout is the smaller of the
time left and ``[placement] timeout``, and the decision never waits for a
request longer than the time left. When it runs out, the decision is a
placement error and ``on_placement_error`` applies. Keep it well below
``[DEFAULT] rpc_response_timeout``. In the nova-api pre-check it counts from
nova's first write, the wait for the server's compute node included.
"""),
    cfg.BoolOpt(
        'judge_derived_requirements',
        default=True,
        help="""
Judge everything a boot of the new image would ask of the host, not only its
``trait:<NAME>=required`` properties.

At boot, nova derives more from an image than its ``trait:`` properties: its
``ResourceRequest`` asks for traits and resources from the vTPM, secure boot,
firmware, memory encryption and CPU thread policy properties, and the
scheduler's image-related request filters ask the compute node for the traits
of the image's disk format, buses, models and architecture (as far as the
``[scheduler]`` options ``query_placement_for_image_type_support`` and
``image_metadata_prefilter`` turn them on). On rebuild nova asks none of
that. With this option, the strategy judges each of these requirements by
placement's rule for it, with nova's own code deriving them, and a rebuild to
an image that needs resources the server does not hold (such as
``MEM_ENCRYPTION_CONTEXT``) is refused.

The ``[scheduler]`` options are read where the decision is made: set them
alike on the scheduler, conductor and API hosts.

Set it to False to judge the image's ``trait:`` properties only, whatever
the strategy: what nova derives from the image's other properties is then
neither judged nor asked of placement (``in_tree_candidates`` sends the
boot's query less those traits, and with the resources a boot asks).
"""),
    cfg.IntOpt(
        'max_image_traits',
        default=64,
        min=1,
        help="""
The largest number of required traits an image may carry. A rebuild to an
image that requires more is refused with a clear reason and no placement
request. This bounds the size of placement queries built from image
properties, which any user who can upload an image controls.
"""),
    cfg.IntOpt(
        'max_url_length',
        default=8000,
        min=512,
        help="""
The longest placement URL, query string included, that is ever sent. Web
servers in front of placement commonly refuse request lines over 8 KiB
(Apache's ``LimitRequestLine`` is 8190). A decision whose query would be
longer is refused before anything is sent.
"""),
    cfg.IntOpt(
        'placement_version_ttl',
        default=300,
        min=0,
        help="""
Seconds for which the highest microversion placement advertises is
trusted. Strategies that choose their microversion from it
(``in_tree_candidates``) read placement's version document again, as one
request of the decision that needs it, once it is older than this, so an
upgrade of placement is picked up without restarting nova. 0 reads it in
every decision that needs it.

Whatever this value, a 406 answer (placement no longer accepts the
microversion sent, e.g. after a rollback) makes the decision read the
version document again at once and ask again with what placement
supports now; ``in_tree_candidates`` then becomes inconclusive below
microversion 1.31 and ``fallback_strategy`` decides, instead of
``on_placement_error``.
"""),
    cfg.StrOpt(
        'hook_on_unsupported_nova',
        default='run_nova_check',
        choices=[
            ('run_nova_check',
             "Start nova-conductor with nova's own image traits check left "
             "in place, and log a CRITICAL message once saying that the "
             "hook is not active."),
            ('refuse_to_start',
             'Exit with an error before nova-conductor starts, which also '
             'stops every build, resize and migration that needs this '
             'conductor.'),
        ],
        help="""
What ``nova-image-traits-conductor`` does when the running nova lacks an
internal the rebuild hook relies on (a nova release this version of
nova-image-traits does not know). Read from the same configuration files as
nova, before the conductor starts. Either way, nothing of nova is changed
when the hook cannot be installed. The scheduler filter does not depend on
these internals and keeps working.
"""),
] + precheck.OPTS


def register_opts(conf):
    # NOTE(founders): ConfigOpts.register_group() keeps a shallow copy of the
    # group, which shares the group's option table with every other ConfigOpts
    # registering the same OptGroup object; overrides would then leak between
    # configurations. Register a fresh group each time.
    group = cfg.OptGroup(GROUP.name, title=GROUP.title, help=GROUP.help)
    conf.register_group(group)
    conf.register_opts(ALL_OPTS, group=GROUP.name)
