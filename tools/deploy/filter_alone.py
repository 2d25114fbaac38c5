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
"""The refusals by ImageTraitsFilter alone, in nova-scheduler.

Rebuilds the conductors accept and the filter refuses (``FILTER_ALONE``):
first with the hook, whose check accepts, and which must then restore
everything after the scheduler's NoValidHost; then with nova's own
``nova-conductor``, which rolls back only the server's image_ref, as
failure-semantics.rst says. Each restarts the control first: the
conductors (with the hook and a strategy of their own, or nova's own)
and the scheduler with the filter's strategy.
"""

from cloud_contents import TRAITS
from nova_services import INSTALLED
from processes import Failure
from rebuild_checks import CASE_IMAGE

#: The refusals by ImageTraitsFilter alone (run_filter_alone): the server,
#: the image, the conductors' strategy (None: nova's own nova-conductor,
#: without the hook) and the filter's.
FILTER_ALONE = (
    # The hook's check counts the trait of compute2's child provider
    # (tree_traits) and accepts; the filter asks what the server holds
    # (held_providers), and the child holds nothing.
    ('b', 'nested', 'tree_traits', 'held_providers'),
    # nova's own check reads only the compute node's root, which has the
    # gold trait, and accepts; the filter with reject sees only the flavor
    # (nova has replaced the current image by then). nova's check alone
    # would refuse the nested rebuild above itself.
    ('a', 'gold', None, 'reject'),
)
#: What the hook restores after a refusal of an image-backed server.
RESTORED = '(restored: image_ref, image properties, request spec;'
NO_HOST = 'There are not enough hosts available.'


class FilterAlone:
    """The filter's refusals, with the hook and with nova's conductor."""

    def run_filter_alone(self):
        """Rebuilds the conductor accepts and ImageTraitsFilter refuses.

        With the hook, its check accepts, the scheduler finds no host, and
        the hook restores everything (failure-semantics.rst: "After any
        refusal ..."). With nova's own nova-conductor, "only its image_ref
        is rolled back": that is checked as well, so that the document
        stays true.
        """
        failed = []
        for server, case, conductors, filter_strategy in FILTER_ALONE:
            hook = conductors is not None
            self.restart_control(conductors or filter_strategy,
                                 filter_strategy, hook)
            label = '%s/%s' % (conductors or 'nova-conductor',
                               filter_strategy)
            if not self.filter_rebuild(label, self.servers[server], case,
                                       conductors, filter_strategy):
                failed.append(label)
        if failed:
            raise Failure('refusals by the filter alone failed: %s'
                          % ', '.join(failed))

    def filter_rebuild(self, label, sid, case, conductors, filter_strategy):
        dep = self.dep
        image = self.images[CASE_IMAGE[case]]
        old_image, db_before = self.before_rebuild(sid, image)
        offsets = self.log_offsets()
        dep.osc('demo', 'server', 'rebuild', '--image', image, sid)
        self.wait_settled(sid, db_before)
        shown = self.user('server', 'show', sid)
        problems = self.refused(shown, old_image, NO_HOST)
        fault = (shown.get('fault') or {}).get('message', '')
        if TRAITS[case] in fault:
            problems.append('the fault names the trait: the filter should '
                            'only say no host: %r' % fault)
        # The decision, and its reason at INFO, in the scheduler's log.
        sched = self.decisions_since('scheduler', offsets['scheduler'])
        if (len(sched) != 1 or sched[0].get('strategy') != filter_strategy
                or sched[0].get('instance') != sid or
                sched[0].get('allowed') != 'False'):
            problems.append('scheduler decision lines %r, wanted one '
                            'refusal by %s' % (sched, filter_strategy))
        reason = ('fails image traits requirements on rebuild of instance '
                  '%s' % sid)
        if reason not in self.log_since('scheduler', offsets['scheduler']):
            problems.append('no %r in the scheduler\'s log' % reason)
        lines = self.decisions_since('super-conductor',
                                     offsets['super-conductor'])
        cell_lines = self.decisions_since('cell1-conductor',
                                          offsets['cell1-conductor'])
        conductor_log = self.log_since('super-conductor',
                                       offsets['super-conductor'])
        after = dep.image_state(sid)
        if conductors is not None:
            # The hook's check accepted, and its WARNING says what it
            # restored after the scheduler's refusal.
            if (len(lines) != 1 or cell_lines or
                    lines[0].get('strategy') != conductors or
                    lines[0].get('allowed') != 'True'):
                problems.append('conductor decision lines %r and %r, wanted '
                                'one acceptance by %s' % (
                                    lines, cell_lines, conductors))
            # The conductor logs it last, after the fault.
            warning = 'Rebuild to image %s refused by NoValidHost' % image
            try:
                dep.wait_log(dep.control_logs['super-conductor'], RESTORED,
                             60, offset=offsets['super-conductor'])
            except Failure:
                pass  # said below
            conductor_log = self.log_since('super-conductor',
                                           offsets['super-conductor'])
            if warning not in conductor_log or RESTORED not in conductor_log:
                problems.append('no WARNING %r ... %r in the super '
                                'conductor\'s log' % (warning, RESTORED))
            problems += self.leftovers(sid, db_before, old_image, image)
        else:
            # nova's own conductor: no decision line, and nova rolls back
            # the image_ref only; the system metadata and the request spec
            # keep the refused image (nova bugs 1744325, 1746032).
            if lines or cell_lines or INSTALLED in conductor_log:
                problems.append('nova-conductor logged decisions: %r %r' % (
                    lines, cell_lines))
            if after['image_ref'] != old_image:
                problems.append('instances.image_ref is %r, wanted %r' % (
                    after['image_ref'], old_image))
            if after['sysmeta'] == db_before['sysmeta']:
                problems.append('nova-conductor restored the system metadata:'
                                ' failure-semantics.rst says it does not')
            if after['spec_image'] != image:
                problems.append('the request spec has image %s, not the '
                                'refused %s: failure-semantics.rst says '
                                'nova-conductor leaves it' % (
                                    after['spec_image'], image))
        if shown['status'] == 'ERROR':
            dep.reset_to_active(sid)
        result = 'ok' if not problems else 'FAILED: ' + '; '.join(problems)
        self.results.append((label, case, 'filter', result))
        dep.note('%-20s %-15s %-7s %s' % (label, case, 'filter', result))
        return not problems
