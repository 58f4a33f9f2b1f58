func _p() {}
