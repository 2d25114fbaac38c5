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
"""What each strategy must decide in the deployment, one row a strategy.

The deployment (see ``deploy.py``):

* ``compute1``'s root provider has ``CUSTOM_NIT_GOLD``, from nova's
  ``provider.yaml``;
* ``compute2``'s root has a child provider, created through the placement
  API, with ``CUSTOM_NIT_NESTED`` and no inventory;
* ``CUSTOM_NIT_ABSENT`` exists in placement and is on no provider;
* every server is booted from an image that requires no trait;
  compute1 has one image-backed server and one volume-backed server (its
  root volume created by cinder from that image).

The cases, each a rebuild of a server booted from the plain image:

``gold``        compute1's server to an image requiring ``CUSTOM_NIT_GOLD``
``absent``      compute1's server to an image requiring ``CUSTOM_NIT_ABSENT``
``nested``      compute2's server to an image requiring ``CUSTOM_NIT_NESTED``
``plain``       compute1's server to an image requiring no trait: the hook
                decides nothing and logs no decision line
``placement_down``  ``gold`` with placement stopped
``vtpm``        compute1's server to an image with ``hw_tpm_version=2.0``
                and ``hw_tpm_model=tpm-crb``, which requires no trait but
                for which nova asks placement for
                ``COMPUTE_SECURITY_TPM_2_0`` and ``COMPUTE_SECURITY_TPM_CRB``
                at boot; no compute node here has them, so every strategy
                refuses it, naming the property
``volume_backed``  compute1's volume-backed server reimaged (compute API
                2.93) to the image requiring ``CUSTOM_NIT_ABSENT``: every
                strategy refuses it before nova asks cinder to reimage the
                volume, and the server stays volume-backed (empty
                ``image_ref``)

After every refusal, the deployment also checks nova's databases: the
server's ``image_ref``, the ``image_*`` system metadata and the request
spec's image are still the current image's, and none names the refused
one. The refusals by ``ImageTraitsFilter`` alone, where the conductor
accepts and the scheduler refuses, are not a column here: they need a
filter strategy other than the conductors' (``scenarios.FILTER_ALONE``).

A new strategy needs a row here; the driver refuses to run a strategy the
package offers but this table does not know.
"""

ACCEPT = 'accept'
REFUSE = 'refuse'

CASES = ('gold', 'absent', 'nested', 'plain', 'placement_down', 'vtpm',
         'volume_backed')

#: strategy: {case: outcome}, and whether the strategy asks placement
#: (then a refusal with placement stopped must name a cause).
EXPECTED = {
    # Placement's boot rule on the providers the server holds: the root,
    # which serves the whole unsuffixed group; the child serves nothing.
    'held_providers': {
        'gold': ACCEPT, 'absent': REFUSE, 'nested': REFUSE,
        'plain': ACCEPT, 'placement_down': REFUSE, 'vtpm': REFUSE,
        'volume_backed': REFUSE,
        'asks_placement': True},
    # Only what the server was booted with; no placement request.
    'reject': {
        'gold': REFUSE, 'absent': REFUSE, 'nested': REFUSE,
        'plain': ACCEPT, 'placement_down': REFUSE, 'vtpm': REFUSE,
        'volume_backed': REFUSE,
        'asks_placement': False},
    # The compute node's own traits.
    'root_traits': {
        'gold': ACCEPT, 'absent': REFUSE, 'nested': REFUSE,
        'plain': ACCEPT, 'placement_down': REFUSE, 'vtpm': REFUSE,
        'volume_backed': REFUSE,
        'asks_placement': True},
    # The union of the tree's traits: the child's count.
    'tree_traits': {
        'gold': ACCEPT, 'absent': REFUSE, 'nested': ACCEPT,
        'plain': ACCEPT, 'placement_down': REFUSE, 'vtpm': REFUSE,
        'volume_backed': REFUSE,
        'asks_placement': True},
    # As a new boot on this host: the unsuffixed group's traits must be on
    # the providers that serve its resources, and the child serves none.
    'in_tree_candidates': {
        'gold': ACCEPT, 'absent': REFUSE, 'nested': REFUSE,
        'plain': ACCEPT, 'placement_down': REFUSE, 'vtpm': REFUSE,
        'volume_backed': REFUSE,
        'asks_placement': True},
    # The providers holding the server's allocations: the root only.
    'allocation_traits': {
        'gold': ACCEPT, 'absent': REFUSE, 'nested': REFUSE,
        'plain': ACCEPT, 'placement_down': REFUSE, 'vtpm': REFUSE,
        'volume_backed': REFUSE,
        'asks_placement': True},
}


def expectations_for(strategies):
    """The rows for these strategies, or a loud error naming the unknown.

    :param strategies: the strategy names the installed package offers
    :raises SystemExit: when a strategy has no row
    """
    unknown = [s for s in strategies if s not in EXPECTED]
    if unknown:
        raise SystemExit(
            'tools/deploy/expectations.py has no row for the strategies %s '
            'that the installed nova-image-traits offers: add what each '
            'must decide in the cases %s' % (', '.join(unknown),
                                             ', '.join(CASES)))
    return {s: EXPECTED[s] for s in strategies}
